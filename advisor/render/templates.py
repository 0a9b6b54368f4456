"""The jinja2 environment the Markdown and HTML reports are rendered with.

HTML templates autoescape every value (user and torch text included); Markdown values go
through the `md` filter, which keeps table pipes and raw HTML from breaking the page.
"""

from __future__ import annotations

import functools

import jinja2


def md_escape(value: object) -> str:
    """Text safe inside Markdown prose and table cells: no raw HTML, no column breaks."""
    text = str(value)
    for raw, safe in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "\\|"), ("\n", " ")):
        text = text.replace(raw, safe)
    return text


@functools.cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("advisor.render", "templates"),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",)),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["md"] = md_escape
    return env
