"""Terminal summary: the shared view model as plain-text tables."""

from __future__ import annotations

import re

from tabulate import tabulate

from advisor.core.model import Report
from advisor.render.ranks import RANK_HEADERS
from advisor.render.view import (
    ACTION_HEADERS,
    BREAK_HEADERS,
    action_rows,
    break_rows,
    build_view,
)

# Control characters other than newline and tab: text from a report (user code, torch messages,
# a report.json from anywhere) must not move the cursor or retitle the terminal.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _table(headers, rows) -> str:  # type: ignore[no-untyped-def]
    return tabulate(rows, headers=list(headers), tablefmt="simple", disable_numparse=True)


def render_text(report: Report) -> str:
    v = build_view(report)
    out = [f"advisor: {v.title} ({v.target}) on {v.environment}"]
    if v.incomplete:
        out.append("INCOMPLETE: the run was interrupted; only what was measured so far is here.")
    out += [f"WARNING: {a}" for a in v.alerts]
    if v.headline:
        out += ["", v.headline]
    if v.actions:
        out += ["", "What to do first:", _table(ACTION_HEADERS, action_rows(v))]
    out += ["", _table(v.mode_headers, v.mode_rows)]
    if v.rank_rows:
        out += ["", "Ranks:", _table(RANK_HEADERS, v.rank_rows)]
        out += [v.rank_note] if v.rank_note else []
    out += ["", *v.splits] if v.splits else []
    if v.breaks:
        out += [
            "",
            f"Graph breaks ({len(v.breaks)} root causes), ranked by the recommended fix's saving:",
            _table(BREAK_HEADERS, break_rows(v)),
        ]
    elif v.sites_only:
        out += [
            "",
            "Breaks captured, not costed:",
            _table(("id", "code", "type", "where", "source"), v.sites_only),
        ]
    elif (default := report.mode("default")) is not None and default.status == "ok":
        out += ["", f"No graph breaks captured ({len(report.graphs)} graph(s))."]
    if v.recompile_rows:
        out += ["", f"Recompiles ({len(v.recompile_rows)}):"]
        out += [f"  {r[0]} {r[1]}: {r[2]}" for r in v.recompile_rows]
    if v.coverage:
        out += ["", f"Attribution coverage: {v.coverage}"]
    out += [f"warning: {w}" for w in v.warnings]
    return _CONTROL.sub("?", "\n".join(out))
