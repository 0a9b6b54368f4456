"""Hostile text in every field of a report (function and file names, gb_type, explanations,
hints, code, warnings, target, params...) cannot inject markup: the HTML has exactly the tags of
the same report with plain text, the Markdown has no raw HTML, no links, and the same blocks and
table rows, and the console gets no control characters."""

from __future__ import annotations

import dataclasses
from html.parser import HTMLParser
from typing import Any

import pytest
from markdown_it import MarkdownIt

from advisor.core.model import Note
from advisor.render.console import render_text
from advisor.render.html import render_html
from advisor.render.markdown import render_markdown
from tests.support.reports import full_report

HOSTILE = (
    "<script>alert(1)</script>\"'</td></tr>| a | b |`<b>x</b>` ``y`` \\`<i>z</i>`"
    "[click](javascript:alert(1)) <img src=x onerror=alert(1)>\r\n# heading\n\x1b]0;pwned\x07"
    + "L"
    * 2000
)
# Fields whose values the renderers look up, not show: kept, so the same parts are rendered.
KEYS = {
    "mode",
    "status",
    "memory_method",
    "kind",
    "reference",
    "verdict",
    "category",
    "fix",
    "basis",
    "reason",
    "knob_outcome",
    "outcome",
    "cause",
    "behaviour_change",
    "doc_url",
    "schema_version",
}


def hostile(value: str) -> str:
    """The same text for the same value, so ids still match one another."""
    return f"{value}{HOSTILE}" if value else value


def poisoned(value: Any, field: str = "") -> Any:
    if isinstance(value, str):
        return value if field in KEYS else hostile(value)
    if isinstance(value, tuple):
        return tuple(poisoned(v, field) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: poisoned(getattr(value, f.name), f.name) for f in dataclasses.fields(value)
        }
        return dataclasses.replace(value, **changes)
    return value


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, tuple[tuple[str, str | None], ...]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # attribute values are the report's (escaped) text; which attributes there are is
        # the structure. A code span (`x`) in any text is shown as <code>x</code>, in the
        # hostile text's too: the one tag text may add, its content escaped, so not counted
        if tag != "code":
            self.tags.append((tag, tuple((name, None) for name, _ in attrs)))


def tags(html: str) -> list[tuple[str, tuple[tuple[str, str | None], ...]]]:
    parser = Tags()
    parser.feed(html)
    return parser.tags


def md_tokens(text: str) -> list[Any]:
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    return tokens + [c for t in tokens for c in (t.children or [])]


def test_every_text_field_is_poisoned() -> None:
    """The poisoning reaches function names, file names, code, hints, warnings and params."""
    report = poisoned(full_report())
    assert HOSTILE in report.breaks[0].site.where.function
    assert HOSTILE in report.breaks[0].site.where.file
    assert HOSTILE in report.breaks[0].site.where.code
    assert HOSTILE in report.sites[0].hints[0] and HOSTILE in report.warnings[1].detail
    assert HOSTILE in report.workload.target and HOSTILE in report.workload.params[0][1]
    assert report.breaks[0].id == report.sites[0].id  # ids still match


# Hostile text also reaches the figures' labels: it must draw without missing-glyph warnings.
@pytest.mark.filterwarnings("error::UserWarning")
def test_html_has_the_same_tags_as_with_plain_text() -> None:
    plain, evil = full_report(), poisoned(full_report())
    html = render_html(evil)
    assert tags(html) == tags(render_html(plain))
    assert "<code>&lt;b&gt;x&lt;/b&gt;</code>" in html  # a code span, its content escaped
    assert "<script" not in html and "onerror=alert" not in html.replace("onerror=alert(1)&gt;", "")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # the text is there, escaped


def test_a_hostile_link_is_not_a_link() -> None:
    report = full_report()
    site = dataclasses.replace(report.sites[0], doc_url="javascript:alert(1)")
    entry = dataclasses.replace(report.breaks[0], site=site)
    html = render_html(dataclasses.replace(report, sites=(site,), breaks=(entry,)))
    assert all(dict(attrs).get("href") is None for _tag, attrs in tags(html))
    assert 'href="javascript' not in html


def test_markdown_has_no_raw_html_no_links_and_the_same_blocks() -> None:
    plain, evil = render_markdown(full_report()), render_markdown(poisoned(full_report()))
    evil_tokens = md_tokens(evil)
    assert not [t for t in evil_tokens if t.type in ("html_inline", "html_block")]
    assert not [t for t in evil_tokens if t.type in ("link_open", "image")]
    blocks = [t.type for t in MarkdownIt("commonmark").enable("table").parse(plain)]
    assert [t.type for t in MarkdownIt("commonmark").enable("table").parse(evil)] == blocks
    assert "<script>" in evil  # shown inside code spans, as text


def test_markdown_without_code_spans_escapes_tags() -> None:
    """Where hostile text is prose, not code, it is escaped, so raw HTML is not even inside
    a code span."""
    note = Note("probe_failed", detail="<script>alert(1)</script> | x")
    md = render_markdown(dataclasses.replace(full_report(), warnings=(note,)))
    assert ": &lt;script&gt;alert(1)&lt;/script&gt; \\| x" in md


def test_console_gets_no_control_characters() -> None:
    text = render_text(poisoned(full_report()))
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text
    assert "pwned" in text


def test_a_code_value_cannot_close_its_own_code_span() -> None:
    from advisor.render.templates import md_code

    shown = md_code("x = `<b>` + ``y``")
    (token,) = [t for t in md_tokens(f"- {shown}") if t.type == "code_inline"]
    assert token.content == "x = `<b>` + ``y``"
