"""Formatting helpers shared by the renderers."""

from __future__ import annotations

import os

from advisor.model import BreakRecord, ModeResult, Report

MODE_LABELS = {
    "eager": "eager",
    "default": "compile (default)",
    "fullgraph": "compile (fullgraph=True)",
}


def fmt_ms(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:.1f}"
    if abs(value) >= 1:
        return f"{value:.{digits}g}" if abs(value) < 10 else f"{value:.2f}"
    return f"{value:.{digits}f}"


def fmt_s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def fmt_pct(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value * 100:.{digits}f}%"


def fmt_bytes(value: int | None) -> str:
    if value is None:
        return "-"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def speedup(report: Report, mode: ModeResult) -> float | None:
    eager = report.mode("eager")
    if eager is None or eager.latency is None or mode.latency is None:
        return None
    if mode.latency.median_ms <= 0:
        return None
    return eager.latency.median_ms / mode.latency.median_ms


def short_path(path: str | None) -> str:
    if not path:
        return "?"
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if not rel.startswith("..") else path


def location(brk: BreakRecord) -> str:
    return f"{short_path(brk.file)}:{brk.line}"


def mode_rows(report: Report) -> list[list[str]]:
    rows = []
    for mode in report.modes:
        lat = mode.latency
        spread = (
            f"{fmt_ms(lat.iqr_ms)} ({fmt_pct(lat.iqr_ms / lat.median_ms)})"
            if lat and lat.median_ms
            else "-"
        )
        up = speedup(report, mode)
        match = {True: "yes", False: "NO", None: "-"}[mode.matches_eager]
        rows.append(
            [
                MODE_LABELS.get(mode.mode, mode.mode),
                mode.status,
                fmt_s(mode.first_call_s),
                fmt_ms(lat.median_ms) if lat else "-",
                spread,
                str(lat.n) if lat else "-",
                f"{up:.2f}x" if up else "-",
                fmt_bytes(mode.peak_memory_bytes),
                str(mode.recompiles) if mode.status == "ok" else "-",
                match if mode.mode != "eager" else "-",
            ]
        )
    return rows


MODE_HEADERS = [
    "mode",
    "status",
    "first call s",
    "median ms",
    "IQR ms",
    "n",
    "speedup",
    "peak mem",
    "recompiles",
    "matches eager",
]


def fullgraph_finding(report: Report) -> str | None:
    mode = report.mode("fullgraph")
    if mode is None or mode.status != "failed" or mode.error is None:
        return None
    err = mode.error
    where = f" at {short_path(err.file)}:{err.line}" if err.file else ""
    code = f" [{err.gb_code}]" if err.gb_code else ""
    what = err.gb_type or err.message
    src = f": `{err.code}`" if err.code else ""
    return f"fullgraph=True fails{code}{where}{src}: {what}"


def segment_label(kind: str, compile_id: str | None, break_id: str | None) -> str:
    if kind == "compiled":
        return f"compiled region {compile_id}"
    if kind == "gap":
        return f"eager gap after {compile_id}" + (f" ({break_id})" if break_id else "")
    if kind == "eager":
        return "eager (skipped frame)" if compile_id is None else f"eager ({compile_id})"
    return kind.replace("_", " ")


def segment_summary(report: Report) -> list[tuple[str, float, float]]:
    """(label, mean µs per call, share of the call) over the profiled calls, in first-seen order."""
    calls = report.attribution.calls
    if not calls:
        return []
    totals: dict[str, float] = {}
    for call in calls:
        for seg in call.segments:
            label = segment_label(seg.kind, seg.compile_id, seg.break_id)
            totals[label] = totals.get(label, 0.0) + seg.duration_us
    call_total = sum(c.total_us for c in calls)
    return [
        (label, total / len(calls), total / call_total if call_total else 0.0)
        for label, total in totals.items()
    ]
