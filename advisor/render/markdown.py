"""The Markdown report: the shared view model through a jinja2 template."""

from __future__ import annotations

from collections.abc import Sequence

from tabulate import tabulate

from advisor.core.model import Report
from advisor.render.ranks import RANK_HEADERS
from advisor.render.templates import environment, md_cell
from advisor.render.view import (
    ACTION_HEADERS,
    BREAK_HEADERS,
    ReportView,
    action_rows,
    break_rows,
    build_view,
)


def md_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    safe = [[md_cell(c) for c in row] for row in rows]
    return tabulate(safe, headers=list(headers), tablefmt="github", disable_numparse=True)


def _tables(v: ReportView) -> dict[str, str]:
    return {
        "actions": md_table(ACTION_HEADERS, action_rows(v)),
        "modes": md_table(v.mode_headers, v.mode_rows),
        "ledger": md_table(("part", "ms/call", "share of the step"), v.ledger_rows),
        "breaks": md_table(BREAK_HEADERS, break_rows(v)),
        "sites": md_table(("id", "code", "type", "where", "source"), v.sites_only),
        "graphs": md_table(
            ("compile id", "function", "file", "lines", "ops", "compile s", "recompile reason"),
            v.graph_rows,
        ),
        "recompiles": md_table(
            ("compile id", "function", "reason", "compile s", "recommendation"), v.recompile_rows
        ),
        "segments": md_table(("segment", "µs per profiled call", "share"), v.segment_rows),
        "ranks": md_table(RANK_HEADERS, v.rank_rows),
    }


def render_markdown(report: Report) -> str:
    view = build_view(report)
    template = environment().get_template("report.md.j2")
    return template.render(v=view, tables=_tables(view))
