"""trace.json: the attributed calls in Chrome trace-event format, for ui.perfetto.dev.

Each profiled call of the default mode is one slice; each of its segments (entry, guard lookup,
compiled region X, eager gap after X, eager, exit) a slice nested inside it, with the compile id
and, for a gap or a skipped frame, the break behind it (registry code, file:line, source text)
in its args. Times are the report's attributed microseconds (the profile corrected for the
profiler's overhead and rescaled to the mode's median), not raw profiler timestamps; the calls
are laid end to end, as the time between them was not recorded.

Pure: report in, JSON text out (the `{"traceEvents": [...]}` object form).
"""

from __future__ import annotations

import json
from typing import Any

from advisor.core.model import BreakSite, CallTimeline, Report, Segment
from advisor.render import prose
from advisor.render.prose import Display
from advisor.render.view import displayer

PID = 1
CALL_TID = 1
CATEGORY = "advisor"
_NOTE = (
    "advisor: profiled calls of the default torch.compile mode, split into segments; times are "
    "attributed microseconds (profiler overhead removed, rescaled to the mode's median), calls "
    "laid end to end"
)


def render_trace(report: Report) -> str:
    display = displayer(report)
    sites = _sites_by_id(report)
    events: list[dict[str, Any]] = _metadata(report)
    offset = 0.0
    for call in report.attribution.calls:
        events.append(_call_event(call, offset))
        events += [_segment_event(seg, call, offset, sites, display) for seg in call.segments]
        offset += call.total_us
    trace = {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "note": _NOTE,
            "workload": report.workload.name,
            "target": report.workload.target,
            "device": report.workload.device,
            "torch": report.environment.torch,
        },
    }
    return json.dumps(trace, separators=(",", ":"), allow_nan=False)  # compact: many events


def _sites_by_id(report: Report) -> dict[str, BreakSite]:
    """Every break a segment can name: the captured sites and the causes inside skipped frames."""
    sites = {s.id: s for s in report.sites}
    for entry in report.breaks:
        sites.setdefault(entry.id, entry.site)
        for cause in entry.causes:
            sites.setdefault(cause.id, cause)
    return sites


def _metadata(report: Report) -> list[dict[str, Any]]:
    """Names for the process and thread rows (metadata events carry no duration)."""
    process = f"advisor: {report.workload.name} ({report.workload.device})"
    return [
        {"name": "process_name", "ph": "M", "pid": PID, "tid": CALL_TID,
         "args": {"name": process}},
        {"name": "thread_name", "ph": "M", "pid": PID, "tid": CALL_TID,
         "args": {"name": "default mode, attributed calls"}},
    ]  # fmt: skip


def _call_event(call: CallTimeline, offset: float) -> dict[str, Any]:
    return {
        "name": f"call {call.index}",
        "cat": CATEGORY,
        "ph": "X",
        "ts": offset,
        "dur": call.total_us,
        "pid": PID,
        "tid": CALL_TID,
        "args": {"call": call.index, "total_us": call.total_us},
    }


def _segment_event(
    seg: Segment,
    call: CallTimeline,
    offset: float,
    sites: dict[str, BreakSite],
    display: Display,
) -> dict[str, Any]:
    args: dict[str, Any] = {"kind": seg.kind, "work_us": seg.work_us}
    if seg.compile_id is not None:
        args["compile_id"] = seg.compile_id
    site = sites.get(seg.break_id) if seg.break_id else None
    if seg.break_id:
        args["break_id"] = seg.break_id
    if site is not None:
        args.update(_break_args(site, display))
    # Clamped to the call: the timeline's rounding must not let a slice poke out of its parent,
    # which trace viewers treat as a nesting error.
    start = min(max(seg.start_us, 0.0), call.total_us)
    end = min(max(seg.start_us + seg.duration_us, start), call.total_us)
    return {
        "name": prose.segment_label(seg.kind, seg.compile_id, seg.break_id),
        "cat": f"{CATEGORY}.{seg.kind}",
        "ph": "X",
        "ts": offset + start,
        "dur": end - start,
        "pid": PID,
        "tid": CALL_TID,
        "args": args,
    }


def _break_args(site: BreakSite, display: Display) -> dict[str, Any]:
    args: dict[str, Any] = {
        "gb_code": site.gb_code,
        "gb_type": site.gb_type,
        "where": prose.location(site.where, display),
        "source": site.where.code,
    }
    if site.frame_skipped:
        args["frame_skipped"] = True
    if site.doc_url:
        args["doc_url"] = site.doc_url
    return args
