"""The jinja2 environment the Markdown and HTML reports are rendered with.

HTML templates autoescape every value (user and torch text included). Markdown has no
autoescape, so every value goes through a filter: `md` for prose (no raw HTML, no links, no
line breaks; `code spans` kept, their text shown as is), `md_code` for a value shown as code,
`md_cell` for table cells (column separators escaped too).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

import jinja2
import markupsafe

from advisor.render.formatting import without_controls

BACKTICKS = re.compile(r"`+")
_LINE_BREAKS = re.compile(r"\r\n|\r|\n")
# Outside code spans: backslashes and backticks first (so each value's code spans are its
# own: a stray backtick cannot pair with one in the next value), then HTML, columns, links.
_PLAIN = (
    ("\\", "\\\\"),
    ("`", "\\`"),
    ("&", "&amp;"),
    ("<", "&lt;"),
    (">", "&gt;"),
    ("|", "\\|"),
    ("[", "\\["),
)


def _one_line(value: object) -> str:
    return without_controls(_LINE_BREAKS.sub(" ", str(value)))


def code_spans(text: str) -> Iterator[tuple[str, bool]]:
    """Split text into (chunk, is_code_span) as CommonMark does: a run of n backticks opens a
    span closed by the next run of exactly n. A run after a backslash is treated as no opener
    (CommonMark may still open one there; its text is then escaped twice, never raw)."""
    pos = plain_start = 0
    while (opener := BACKTICKS.search(text, pos)) is not None:
        start, end = opener.span()
        size = end - start
        closer = next(
            (c for c in BACKTICKS.finditer(text, end) if c.end() - c.start() == size), None
        )
        if closer is None or (start > 0 and text[start - 1] == "\\"):
            pos = end
            continue
        yield text[plain_start:start], False
        yield text[start : closer.end()], True
        pos = plain_start = closer.end()
    yield text[plain_start:], False


def _escape_plain(text: str) -> str:
    for raw, safe in _PLAIN:
        text = text.replace(raw, safe)
    return text


def md_escape(value: object) -> str:
    """Markdown prose: no raw HTML, links or line breaks; code spans kept as they are."""
    return "".join(
        chunk if is_code else _escape_plain(chunk)
        for chunk, is_code in code_spans(_one_line(value))
    )


def md_cell(value: object) -> str:
    """A table cell: as `md_escape`, with `|` escaped inside code spans too (GitHub tables
    split cells on it even there, and drop the backslash)."""
    return "".join(
        chunk.replace("|", "\\|") if is_code else _escape_plain(chunk)
        for chunk, is_code in code_spans(_one_line(value))
    )


def md_code(value: object) -> str:
    """A value as one code span: fenced with more backticks than it holds, so nothing in it
    can end the span early."""
    text = _one_line(value)
    longest = max((len(m.group()) for m in BACKTICKS.finditer(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


_BLOCK_MARK = re.compile(r"^(?:([#*+=~_-])|(\d+)([.)]))")


def md_block(value: object) -> str:
    """Several lines of prose (a recipe) as one paragraph: each line escaped as `md_escape`,
    with no blank line and no mark that would start a block (heading, list, rule, fence)."""
    lines = [line.strip() for line in _LINE_BREAKS.split(str(value))]
    return "\n".join(
        _BLOCK_MARK.sub(lambda m: f"\\{m[1]}" if m[1] else f"{m[2]}\\{m[3]}", md_escape(line))
        for line in lines
        if line
    )


def html_codes(value: object) -> markupsafe.Markup:
    """Text for HTML, escaped, with each code span (`x`) shown as <code>x</code>."""
    return markupsafe.Markup("").join(
        markupsafe.Markup("<code>{}</code>").format(chunk.strip("`").strip())
        if is_code
        else markupsafe.escape(chunk)
        for chunk, is_code in code_spans(str(value))
    )


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
    env.filters["codes"] = html_codes
    env.filters["md_code"] = md_code
    env.filters["md_block"] = md_block
    return env
