"""The view model: one report as the plain values every renderer shows.

Markdown, HTML and the console read the same `ReportView` (the per-break fields are built once,
in `advisor.render.view_breaks`; the alerts in `advisor.render.alerts`), so the formats cannot
drift apart. Paths are shortened here: relative to the workload's folder for user code,
package-relative for installed code.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from advisor.core.model import LatencyStats, ModeResult, Report
from advisor.core.options import FILES_PROTOCOL
from advisor.render import prose, ranks
from advisor.render.alerts import ALERT_NOTES, alerts
from advisor.render.formatting import (
    MODE_LABELS,
    Display,
    displayer,
    fmt_bytes,
    fmt_ms,
    fmt_pct,
    fmt_s,
)
from advisor.render.harness_text import harness_text
from advisor.render.notes import notes_text
from advisor.render.view_actions import ActionView, TriedView, action_views
from advisor.render.view_breaks import BreakView, break_view
from advisor.render.view_patches import PatchView, patch_views
from advisor.render.view_script import ScriptView, script_view

MEMORY_METHODS = {
    "cpu_profiler": (
        "CPU: peak of live bytes allocated during one warm call, from torch.profiler memory "
        "events (each op's net allocation placed at its start; memory held before the call "
        "excluded)"
    ),
    "cuda_allocator": "CUDA: torch.cuda.max_memory_allocated over one warm call",
}


@dataclass(frozen=True)
class ReportView:
    title: str
    target: str
    environment: str
    measured: str
    harness: str
    incomplete: bool
    headline: str | None
    alerts: tuple[str, ...]  # shown at the top: noisy modes and what-ifs, fullgraph failure
    mode_headers: tuple[str, ...]
    mode_rows: tuple[tuple[str, ...], ...]
    memory_note: str
    actions: tuple[ActionView, ...]  # only what saves time per call (`ActionOutcome.DO`)
    ledger_rows: tuple[tuple[str, str, str], ...]
    ledger_note: str | None
    breaks: tuple[BreakView, ...]
    sites_only: tuple[tuple[str, ...], ...]  # breaks captured but not costed (no profile)
    graph_rows: tuple[tuple[str, ...], ...]
    recompile_rows: tuple[tuple[str, ...], ...]
    coverage: str | None
    method: str | None
    segment_rows: tuple[tuple[str, str, str], ...]
    warnings: tuple[str, ...]
    what_ifs: tuple[str, ...] = field(default_factory=tuple)
    redacted: bool = False
    rank_rows: tuple[tuple[str, ...], ...] = ()  # data-parallel run: each rank's modes
    rank_note: str | None = None
    splits: tuple[str, ...] = ()  # graphs split on purpose (DDP's optimizer)
    script: ScriptView | None = None  # a script target: its survey (None: not a script)
    patches: tuple[PatchView, ...] = ()  # patches generated for breaks in the user's code
    tried: tuple[TriedView, ...] = ()  # measured, and not worth it: slower or no effect
    compile_time: tuple[str, ...] = ()  # what changes compile time only
    # the numerics caveat every compiled variant shares (they all match eager within rounding),
    # said once under the actions instead of under each
    numerics_note: str | None = None


BREAK_HEADERS = (
    "#",
    "code",
    "type",
    "where",
    "source",
    "per call",
    "gap ms",
    "cost ms",
    "share",
    "verdict",
)
MODE_HEADERS = (
    "mode",
    "status",
    "first call s",
    "median ms",
    "IQR ms",
    "median 95% CI",
    "blocks",
    "speedup",
    "peak mem",
    "recompiles",
    "matches eager",
)


def build_view(report: Report) -> ReportView:
    display = displayer(report)
    wl = report.workload
    params = "".join(f" {k}={v}" for k, v in wl.params)
    return ReportView(
        title=wl.name + _protocol_mark(report),
        target=f"{wl.target}{params}",
        environment=_environment(report),
        measured=report.created_at
        + (f" in {report.wall_s:.1f} s" if report.wall_s is not None else ""),
        harness=harness_text(report),
        incomplete=report.incomplete,
        headline=prose.headline(report),
        alerts=tuple(alerts(report, display)),
        mode_headers=MODE_HEADERS,
        mode_rows=tuple(_mode_row(report, m) for m in report.modes),
        memory_note=_memory_note(report),
        **action_views(report, display),
        ledger_rows=_ledger_rows(report),
        ledger_note=prose.ledger_note(report.ledger) if report.ledger else None,
        breaks=tuple(break_view(i, b, report, display) for i, b in enumerate(report.breaks, 1)),
        sites_only=_sites_only(report, display),
        graph_rows=_graph_rows(report, display),
        recompile_rows=_recompile_rows(report),
        coverage=_coverage(report),
        method=prose.method(report.attribution.calibration) if report.attribution.calls else None,
        segment_rows=tuple(
            (label, f"{us:.1f}", fmt_pct(share)) for label, us, share in segment_summary(report)
        ),
        # each said once: a note shown as an alert is not repeated, notes of one kind folded
        warnings=tuple(notes_text(tuple(n for n in report.warnings if n.kind not in ALERT_NOTES))),
        what_ifs=tuple(
            prose.what_if_line(w, training=report.training is not None) for w in report.what_ifs
        ),
        redacted=report.redacted,
        rank_rows=ranks.rank_rows(report),
        rank_note=ranks.rank_note(report),
        splits=ranks.split_lines(report),
        script=script_view(report),
        patches=patch_views(report, display),
    )


def _memory_note(report: Report) -> str:
    """How peak memory was measured, once per method the modes used."""
    methods = {
        MEMORY_METHODS.get(m.memory_method, m.memory_method)
        for m in report.modes
        if m.memory_method
    }
    return "; ".join(sorted(methods))


def _sites_only(report: Report, display: Display) -> tuple[tuple[str, ...], ...]:
    """The breaks captured but not costed (no profile): shown only when nothing was costed."""
    if report.breaks:
        return ()
    return tuple(
        (s.id, s.gb_code or "?", s.gb_type, prose.location(s.where, display), s.where.code)
        for s in report.sites
    )


def _graph_rows(report: Report, display: Display) -> tuple[tuple[str, ...], ...]:
    return tuple(
        (
            g.compile_id,
            g.function,
            display(g.file),
            f"{min(g.lines)}-{max(g.lines)}" if g.lines else "-",
            str(g.ops),
            fmt_s(g.compile_s),
            g.recompile_reason or "",
        )
        for g in report.graphs
    )


def _recompile_rows(report: Report) -> tuple[tuple[str, ...], ...]:
    return tuple(
        (
            r.compile_id,
            r.function,
            r.reason,
            fmt_s(r.compile_s),
            prose.recompile_recommendation(r),
        )
        for r in report.recompiles
    )


QUICK_MARK = " (quick protocol: every arm in one process, not replicated)"
FILES_MARK = " (from your run's files: every saving estimated)"


def _protocol_mark(report: Report) -> str:
    """The report's first line says when its numbers rest on one process (`--quick`), or on
    nothing run at all (`advisor trace`)."""
    if report.settings.protocol == FILES_PROTOCOL:
        return FILES_MARK
    quick = report.settings.protocol == "quick" and not report.settings.isolate
    return QUICK_MARK if quick and report.settings.ranks <= 1 else ""


def _environment(report: Report) -> str:
    """Where it ran; read from files, only what the files say (the parts left unknown are
    left out rather than shown empty)."""
    env, wl = report.environment, report.workload
    if report.settings.protocol == FILES_PROTOCOL:
        return "; ".join(
            part
            for part in (
                wl.device,
                f"torch {env.torch}" if env.torch else "",
                f"Python {env.python}" if env.python else "",
            )
            if part
        )
    text = (
        f"{wl.device} ({env.device_name}); torch {env.torch}; Python {env.python}; "
        f"{env.platform}; {env.cpu_threads} CPU threads"
    )
    if env.load_average:
        text += f"; load average {', '.join(f'{v:.2f}' for v in env.load_average)} at start"
    return text


def speedup(report: Report, mode: ModeResult) -> float | None:
    eager = report.mode("eager")
    if eager is None or eager.latency is None or mode.latency is None:
        return None
    if mode.latency.median_ms <= 0:
        return None
    return eager.latency.median_ms / mode.latency.median_ms


def _mode_row(report: Report, mode: ModeResult) -> tuple[str, ...]:
    lat = mode.latency
    spread = f"{fmt_ms(lat.iqr_ms)} ({fmt_pct(lat.relative_iqr)})" if lat else "-"
    target = {True: " (target met)", False: " (target NOT met)", None: ""}
    up = speedup(report, mode)
    match = {True: "yes", False: "NO", None: "-"}[mode.matches_eager]
    return (
        MODE_LABELS.get(mode.mode, mode.mode),
        mode.status,
        fmt_s(mode.first_call_s),
        fmt_ms(lat.median_ms) if lat else "-",
        spread,
        f"±{fmt_pct(lat.relative_ci)}{target[lat.target_met]}" if lat and lat.ci_ms else "-",
        _blocks(lat) if lat else "-",
        f"{up:.2f}x" if up else "-",
        fmt_bytes(mode.peak_memory_bytes),
        str(mode.recompiles) if mode.status == "ok" else "-",
        match if mode.mode != "eager" else "-",
    )


def _blocks(lat: LatencyStats) -> str:
    """The timed blocks; replicated, as processes x rounds (the fewest of any process)."""
    rep = lat.replication
    return f"{rep.processes}x{rep.rounds}" if rep is not None else str(lat.n)


_TERM_LABELS = {
    "guards": "guard evaluation of the graphs that go",
    "regions": "extra regions and graph calls",
    "backward": "the backward graphs' hops",
    "python": "Python at the breaks",
    "tensor_work": "fusible eager tensor work",
    "fusion": "fusion across the merged graph",
}


def _ledger_rows(report: Report) -> tuple[tuple[str, str, str], ...]:
    ledger = report.ledger
    if ledger is None:
        return ()
    step = ledger.step_ms

    def row(label: str, value: float | None) -> tuple[str, str, str]:
        share = value / step if value is not None and step else None
        return label, fmt_ms(value), fmt_pct(share)

    training = ledger.backward_ms is not None or ledger.optimizer_ms is not None
    forward = "forward: compiled work that stays" if training else "compiled work that stays"
    rows = [
        row("default-mode step", ledger.step_ms),
        row(forward, ledger.compiled_ms),
    ]
    if training:
        rows += [
            row("backward: compiled backward graphs and the autograd engine", ledger.backward_ms),
            row("optimizer: step and zero_grad", ledger.optimizer_ms),
        ]
    rows += [
        row("graph breaks (overhead + tensor work + Python)", ledger.breaks_ms),
        row("other (entry, exit, eager outside breaks)", ledger.other_ms),
        row("saving with every recommended fix", ledger.saving_ms),
        row("projected step, all fixed", ledger.projected_ms),
        row("guard evaluation (in the compiled part)", ledger.guard_lookup_ms),
    ]
    rows += [
        row(f"fixing removes: {_TERM_LABELS.get(x.name, x.name)} [{x.basis}]", x.ms)
        for x in ledger.terms
    ]
    if ledger.library_ms:
        rows.append(
            row("breaks in library code (need a library change, estimated)", ledger.library_ms)
        )
    if ledger.measured_all_fixed_ms is not None:
        source = ledger.measured_all_fixed_source or "fullgraph"
        shown = "fullgraph=True" if source == "fullgraph" else source
        rows.append(row(f"measured all-fixed step ({shown})", ledger.measured_all_fixed_ms))
    if ledger.eager_ms is not None:
        rows.append(row("eager", ledger.eager_ms))
    if ledger.projected_speedup_vs_eager is not None:
        rows.append(("projected speedup vs eager", f"{ledger.projected_speedup_vs_eager:.2f}x", ""))
    return tuple(rows)


def _coverage(report: Report) -> str | None:
    att = report.attribution
    if att.coverage is None:
        return None
    text = f"{fmt_pct(att.coverage)} of profiled call time attributed to segments"
    named = _named_share(report)
    if named is not None:
        text += (
            f", {fmt_pct(named)} of it to a part with a profiler event of its own (compiled "
            "regions, guard lookups, breaks, backward graphs, the autograd engine, the optimizer; "
            "the rest is entry, exit and eager code outside the breaks)"
        )
    return f"{text}, over {att.profiled_calls} profiled calls"


_UNNAMED_SEGMENTS = ("entry", "exit", "eager")


def _named_share(report: Report) -> float | None:
    """The share of the profiled calls' time in segments that name what ran; unlike coverage,
    which is whole by construction, this falls where the profile saw nothing it could name."""
    segments = [s for call in report.attribution.calls for s in call.segments]
    total = sum(s.duration_us for s in segments)
    if total <= 0:
        return None
    named = sum(s.duration_us for s in segments if s.kind not in _UNNAMED_SEGMENTS or s.break_id)
    return named / total


def segment_summary(report: Report) -> list[tuple[str, float, float]]:
    """(label, mean µs per call, share of the call) over the profiled calls, first-seen order."""
    calls = report.attribution.calls
    if not calls:
        return []
    totals: dict[str, float] = {}
    for call in calls:
        for seg in call.segments:
            label = prose.segment_label(seg.kind, seg.compile_id, seg.break_id)
            totals[label] = totals.get(label, 0.0) + seg.duration_us
    call_total = sum(c.total_us for c in calls)
    return [
        (label, total / len(calls), total / call_total if call_total else 0.0)
        for label, total in totals.items()
    ]


def break_rows(view: ReportView) -> list[tuple[str, ...]]:
    """The break table shared by the console and Markdown."""
    return [
        (
            str(b.rank),
            b.gb_code,
            b.gb_type[:40],
            b.where,
            b.code[:50],
            b.occurrences,
            b.gap_ms,
            b.cost_ms,
            b.cost_share,
            b.verdict,
        )
        for b in view.breaks
    ]
