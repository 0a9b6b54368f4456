"""The Markdown report: the shared view model through a jinja2 template."""

from __future__ import annotations

from collections.abc import Sequence

from tabulate import tabulate

from advisor.core.model import Report
from advisor.render.formatting import without_controls
from advisor.render.ranks import RANK_HEADERS
from advisor.render.templates import BACKTICKS, environment, md_cell
from advisor.render.view import BREAK_HEADERS, ReportView, break_rows, build_view
from advisor.render.view_actions import ACTION_HEADERS, action_rows
from advisor.render.view_patches import REDACTED_DIFF
from advisor.render.view_script import SCRIPT_HEADERS


def md_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    safe = [[md_cell(c) for c in row] for row in rows]
    return tabulate(safe, headers=list(headers), tablefmt="github", disable_numparse=True)


def md_fenced(text: str, language: str = "text") -> str:
    """Untrusted lines (a script's output, a diff of source) as one fenced code block, shown as
    written: its fence is longer than any run of backticks in the text, so no line of it can
    close the block."""
    text = without_controls(text)
    longest = max((len(m.group()) for m in BACKTICKS.finditer(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def _tails(v: ReportView) -> dict[str, str]:
    """The script's own stdout and stderr tails, each fenced (none: not a script, or silent)."""
    script = v.script
    if script is None:
        return {}
    tails = {"stdout": script.stdout_tail, "stderr": script.stderr_tail}
    return {name: md_fenced(tail) for name, tail in tails.items() if tail}


def _tables(v: ReportView) -> dict[str, str]:
    return {
        "actions": md_table(ACTION_HEADERS, action_rows(v.actions)),
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
        "script": md_table(SCRIPT_HEADERS, v.script.rows if v.script else ()),
    }


def render_markdown(report: Report) -> str:
    view = build_view(report)
    template = environment().get_template("report.md.j2")
    diffs = [
        md_fenced(p.diff.rstrip("\n"), "diff") if p.diff else f"({p.no_diff or REDACTED_DIFF})"
        for p in view.patches
    ]
    return template.render(v=view, tables=_tables(view), tails=_tails(view), diffs=diffs)
