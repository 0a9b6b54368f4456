"""report.json: the records, plus the documented convenience fields derived from them.

Each break gets `gb_code`, `gb_type`, `file`, `line`, `function`, `code`, `also_at`,
`frame_skipped`, `verdict`, `verdict_label` (an `ignore` with its reason: "within noise",
"small", "never ran"), `category`, `overhead_ms`, `tensor_work_ms`, `python_work_ms`,
`gap_ms`, `why`, `recipe` and its `what_if` record; each action a `title`; the report gets
`alerts` (the warnings every rendering shows at its top: noisy modes, medians that missed their
target, a fullgraph failure), `warning_texts` (each note in `warnings`, worded) and `patches`
(each generated patch: `name`, `label`, `outcome`, `caveat`, `diff`); a patch action gets its
`diff`. They are
ignored when the report is read back (the records are the source), so a report re-renders the
same anywhere.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from advisor.core.model import Action, BreakEntry, Report, to_jsonable
from advisor.render import prose
from advisor.render.view import ReportView, build_view, displayer


def render_json(report: Report) -> str:
    data = to_jsonable(report)
    display = displayer(report)
    view = build_view(report)
    data["headline"] = view.headline
    data["alerts"] = list(view.alerts)
    data["warning_texts"] = list(view.warnings)
    data["breaks"] = [
        {**entry_data, **_break_fields(entry, report, display)}
        for entry, entry_data in zip(report.breaks, data["breaks"], strict=True)
    ]
    data["actions"] = [
        {**action_data, "title": prose.action_title(action, report, display), **_diff(action, view)}
        for action, action_data in zip(report.actions, data["actions"], strict=True)
    ]
    # the views' words and diffs (the records are in `what_ifs` already)
    data["patches"] = [
        {k: v for k, v in dataclasses.asdict(p).items() if k != "patch"} for p in view.patches
    ]
    return json.dumps(data, indent=2, allow_nan=False)


def _diff(action: Action, view: ReportView) -> dict[str, str]:
    """A patch action's unified diff, as report.md shows it."""
    if action.patch is None:
        return {}
    shown = next((p.diff for p in view.patches if p.patch == action.patch), None)
    return {"diff": shown} if shown else {}


def _break_fields(entry: BreakEntry, report: Report, display: prose.Display) -> dict[str, Any]:
    site, d, parts = entry.site, entry.decision, entry.parts
    w = report.what_if(entry.what_if_knob)
    return {
        "gb_code": site.gb_code,
        "gb_type": site.gb_type,
        "file": site.where.file,
        "line": site.where.line,
        "function": site.where.function,
        "code": site.where.code,
        "also_at": to_jsonable(site.also_at),
        "frame_skipped": site.frame_skipped,
        "verdict": d.verdict if d else None,
        "verdict_label": prose.verdict_label(d) if d else None,
        "category": d.category if d else None,
        "gap_ms": entry.gap_ms,
        "overhead_ms": parts.overhead_ms,
        "tensor_work_ms": parts.tensor_work_ms,
        "python_work_ms": parts.python_work_ms,
        "why": prose.why(entry, report),
        "recipe": prose.recipe(entry, report, display) if d else "",
        "what_if": to_jsonable(w) if w is not None else None,
    }
