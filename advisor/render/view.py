"""The view model: one report as the plain values every renderer shows.

Markdown, HTML and the console read the same `ReportView` (the per-break fields are built once,
here), so the formats cannot drift apart. Paths are shortened here: relative to the workload's
folder for user code, package-relative for installed code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from advisor.core.model import BreakEntry, ModeResult, Report, Settings
from advisor.core.paths import common_folder, display_path
from advisor.render import prose
from advisor.render.notes import note_text
from advisor.render.prose import Display

MODE_LABELS = {
    "eager": "eager",
    "default": "compile (default)",
    "fullgraph": "compile (fullgraph=True)",
}
MEMORY_METHODS = {
    "cpu_profiler": (
        "CPU: peak of live bytes allocated during one warm call, from torch.profiler memory "
        "events (each op's net allocation placed at its start; memory held before the call "
        "excluded)"
    ),
    "cuda_allocator": "CUDA: torch.cuda.max_memory_allocated over one warm call",
}
NOISY_SPREAD = 0.10  # IQR / median above this: the mode's numbers are flagged uncertain


def fmt_ms(value: float | None) -> str:
    return prose._ms(value)


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


@dataclass(frozen=True)
class Field:
    """One labelled line of a break's details."""

    label: str
    text: str
    code: bool = False  # show the text as code


@dataclass(frozen=True)
class BreakView:
    rank: int
    id: str
    gb_code: str
    doc_url: str | None
    gb_type: str
    where: str
    code: str
    verdict: str
    category: str
    occurrences: str
    gap_ms: str
    cost_ms: str
    cost_share: str
    fields: tuple[Field, ...]
    recipe: str
    hints: tuple[str, ...]


@dataclass(frozen=True)
class ActionView:
    rank: int
    title: str
    kind: str
    saving: str
    measured: bool
    breaks: str


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
    actions: tuple[ActionView, ...]
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


def displayer(report: Report) -> Display:
    files = [s.where.file for s in report.sites] + [g.file for g in report.graphs]
    return partial(display_path, base=common_folder(files))


def build_view(report: Report) -> ReportView:
    display = displayer(report)
    wl = report.workload
    params = "".join(f" {k}={v}" for k, v in wl.params)
    return ReportView(
        title=wl.name,
        target=f"{wl.target}{params}",
        environment=_environment(report),
        measured=report.created_at
        + (f" in {report.wall_s:.1f} s" if report.wall_s is not None else ""),
        harness=_harness(report),
        incomplete=report.incomplete,
        headline=prose.headline(report),
        alerts=tuple(_alerts(report, display)),
        mode_headers=MODE_HEADERS,
        mode_rows=tuple(_mode_row(report, m) for m in report.modes),
        memory_note="; ".join(
            sorted(
                {
                    MEMORY_METHODS.get(m.memory_method, m.memory_method)
                    for m in report.modes
                    if m.memory_method
                }
            )
        ),
        actions=tuple(_action_view(i, a, report, display) for i, a in enumerate(report.actions, 1)),
        ledger_rows=_ledger_rows(report),
        ledger_note=prose.ledger_note(report.ledger) if report.ledger else None,
        breaks=tuple(_break_view(i, b, report, display) for i, b in enumerate(report.breaks, 1)),
        sites_only=tuple(
            (s.id, s.gb_code or "?", s.gb_type, prose.location(s.where, display), s.where.code)
            for s in report.sites
        )
        if not report.breaks
        else (),
        graph_rows=tuple(
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
        ),
        recompile_rows=tuple(
            (
                r.compile_id,
                r.function,
                r.reason,
                fmt_s(r.compile_s),
                prose.recompile_recommendation(r),
            )
            for r in report.recompiles
        ),
        coverage=_coverage(report),
        method=prose.method(report.attribution.calibration) if report.attribution.calls else None,
        segment_rows=tuple(
            (label, f"{us:.1f}", fmt_pct(share)) for label, us, share in segment_summary(report)
        ),
        warnings=tuple(note_text(n) for n in report.warnings),
        what_ifs=tuple(prose.what_if_line(w) for w in report.what_ifs),
        redacted=report.redacted,
    )


def _environment(report: Report) -> str:
    env, wl = report.environment, report.workload
    text = (
        f"{wl.device} ({env.device_name}); torch {env.torch}; Python {env.python}; "
        f"{env.platform}; {env.cpu_threads} CPU threads"
    )
    if env.load_average:
        text += f"; load average {', '.join(f'{v:.2f}' for v in env.load_average)} at start"
    return text


def _harness(report: Report) -> str:
    st = report.settings
    rounds = (
        f"at least {st.repeats} interleaved rounds, then more until each median's 95% interval "
        f"is within ±{st.target_ci * 100:g}% of it"
        if st.target_ci > 0
        else f"{st.repeats} interleaved rounds"
    )
    threads = f", {st.threads} thread(s) pinned" if st.threads else ""
    text = (
        f"{st.warmup} warm-up calls, {rounds}; blocks of at least {st.min_block_s * 1e3:g} ms, "
        f"budget {st.budget_s:g} s{threads}"
    )
    if st.isolate:
        limit = f" (timeout {st.timeout_s:g} s)" if st.timeout_s else ""
        text += (
            f"; isolated: each mode and what-if in its own process{limit}, timed one after the "
            "other (not interleaved: drift between modes is not cancelled)"
        )
    return text


def _alerts(report: Report, display: Display) -> list[str]:
    out = []
    if report.incomplete:
        out.append("Incomplete: the run was interrupted; only the modes measured so far are here.")
    busy = busy_machine_alert(report)
    if busy:
        out.append(busy)
    for m in report.modes:
        alert = noise_alert(m, report.settings)
        if alert:
            out.append(alert)
    for w in report.what_ifs:
        if w.status == "measured" and w.target_met is False:
            out.append(
                f"what-if `{w.knob}`: the medians' 95% intervals did not reach the "
                f"±{report.settings.target_ci * 100:g}% target in {w.rounds} rounds; its measured "
                "saving is uncertain."
            )
    finding = fullgraph_finding(report, display)
    if finding:
        out.append(finding)
    out += [
        mode_failure(m, display)
        for m in report.modes
        if m.status in ("failed", "skipped")
        and m.error is not None
        and not (m.mode == "fullgraph" and finding)  # said above, with its break
    ]
    return out


def mode_failure(mode: ModeResult, display: Display) -> str:
    """Why a mode has no numbers: its error type, message and where, if known."""
    label = MODE_LABELS.get(mode.mode, mode.mode)
    err = mode.error
    if err is None:
        return f"{label} {mode.status}"
    if mode.status == "skipped":
        return f"{label} skipped: {err.message}"
    where = f" at {display(err.file)}:{err.line}" if err.file else ""
    return f"{label} failed ({err.type}{where}): {err.message}"


def safe_url(url: str | None) -> str | None:
    """Only web links are shown as links: a report read from disk may carry anything."""
    return url if url and url.startswith(("https://", "http://")) else None


def busy_machine_alert(report: Report) -> str | None:
    """Other work on the machine when measuring began: more runnable threads than CPUs."""
    env = report.environment
    if not env.load_average or not env.cpu_count or env.load_average[0] <= env.cpu_count:
        return None
    advice = (
        "; --threads 1 keeps torch's threads from waiting on each other while descheduled"
        if not report.settings.threads
        else ""
    )
    return (
        f"The machine was busy when measuring began (load average {env.load_average[0]:.2f} "
        f"on {env.cpu_count} CPUs): timings are likely noisy{advice}."
    )


def noise_alert(mode: ModeResult, settings: Settings) -> str | None:
    """Why a mode's numbers are uncertain (a wide spread, a median whose interval missed the
    target), or None when they are not."""
    lat = mode.latency
    if lat is None:
        return None
    reasons = []
    spread = lat.relative_iqr
    if spread is not None and spread > NOISY_SPREAD:
        reasons.append(f"IQR {fmt_pct(spread)} of its median")
    if lat.target_met is False:
        reasons.append(
            f"its median's 95% interval (±{fmt_pct(lat.relative_ci)} after {lat.n} blocks) "
            f"missed the ±{settings.target_ci * 100:g}% target"
        )
    if not reasons:
        return None
    # measured (reports/benchmarks/adaptive): on a shared 2-core machine, clean_mlp's IQR was
    # 60-115% with torch's default threads and 2-7% with --threads 1
    hint = (
        " On a shared machine --threads 1 often steadies it (torch's threads stop waiting on "
        "each other when another process takes a CPU)."
        if not settings.threads
        else ""
    )
    return (
        f"{MODE_LABELS.get(mode.mode, mode.mode)} is noisy: {' and '.join(reasons)}; costs, "
        f"verdicts and comparisons from it are uncertain.{hint}"
    )


def fullgraph_finding(report: Report, display: Display) -> str | None:
    mode = report.mode("fullgraph")
    if mode is None or mode.status != "failed" or mode.error is None:
        return None
    err = mode.error
    where = f" at {display(err.file)}:{err.line}" if err.file else ""
    code = f" [{err.gb_code}]" if err.gb_code else ""
    src = f": `{err.code}`" if err.code else ""
    return f"fullgraph=True fails{code}{where}{src}: {err.gb_type or err.message}"


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
        str(lat.n) if lat else "-",
        f"{up:.2f}x" if up else "-",
        fmt_bytes(mode.peak_memory_bytes),
        str(mode.recompiles) if mode.status == "ok" else "-",
        match if mode.mode != "eager" else "-",
    )


def _action_view(rank: int, action, report: Report, display: Display) -> ActionView:  # type: ignore[no-untyped-def]
    if action.saving_ms is None:
        saving = f"compile time {fmt_s(action.compile_s)} s" if action.compile_s else "-"
    else:
        saving = f"{fmt_ms(action.saving_ms)} ms/call"
        if action.saving_ci_ms:
            low, high = action.saving_ci_ms
            saving += f" [{fmt_ms(low)}, {fmt_ms(high)}]"
        if report.ledger and report.ledger.step_ms:
            saving += f" ({fmt_pct(action.saving_ms / report.ledger.step_ms)} of the step)"
    return ActionView(
        rank,
        prose.action_title(action, report, display),
        action.kind,
        saving,
        action.measured,
        ", ".join(action.breaks),
    )


def _ledger_rows(report: Report) -> tuple[tuple[str, str, str], ...]:
    ledger = report.ledger
    if ledger is None:
        return ()
    step = ledger.step_ms

    def row(label: str, value: float | None) -> tuple[str, str, str]:
        share = value / step if value is not None and step else None
        return label, fmt_ms(value), fmt_pct(share)

    rows = [
        row("default-mode step", ledger.step_ms),
        row("compiled work that stays", ledger.compiled_ms),
        row("graph breaks (overhead + tensor work + Python)", ledger.breaks_ms),
        row("other (entry, exit, eager outside breaks)", ledger.other_ms),
        row("saving with every recommended fix", ledger.saving_ms),
        row("projected step, all fixed", ledger.projected_ms),
        row("guard evaluation (in the compiled part)", ledger.guard_lookup_ms),
    ]
    if ledger.measured_all_fixed_ms is not None:
        rows.append(row("measured all-fixed step (fullgraph=True)", ledger.measured_all_fixed_ms))
    if ledger.eager_ms is not None:
        rows.append(row("eager", ledger.eager_ms))
    if ledger.projected_speedup_vs_eager is not None:
        rows.append(("projected speedup vs eager", f"{ledger.projected_speedup_vs_eager:.2f}x", ""))
    return tuple(rows)


def _break_view(rank: int, entry: BreakEntry, report: Report, display: Display) -> BreakView:
    site = entry.site
    d = entry.decision
    return BreakView(
        rank=rank,
        id=entry.id,
        gb_code=site.gb_code or "?",
        doc_url=safe_url(site.doc_url),
        gb_type=site.gb_type,
        where=prose.location(site.where, display),
        code=site.where.code,
        verdict=prose.verdict_label(d) if d else "-",
        category=prose.category_title(d.category) if d else "",
        occurrences=f"{entry.occurrences_per_call:g}",
        gap_ms=fmt_ms(entry.gap_ms),
        cost_ms=fmt_ms(entry.cost_ms),
        cost_share=fmt_pct(entry.cost_share),
        fields=tuple(_break_fields(entry, report, display)),
        recipe=prose.recipe(entry, report, display) if d else "",
        hints=site.hints,
    )


def _break_fields(entry: BreakEntry, report: Report, display: Display) -> list[Field]:
    site, d, parts = entry.site, entry.decision, entry.parts
    out = []
    if site.where.code:
        out.append(Field("source", site.where.code, True))
    if site.where.function:
        out.append(Field("function", site.where.function))
    if site.reached_from:
        out.append(
            Field(
                "reached from",
                prose.location(site.reached_from, display)
                + (f": {site.reached_from.code}" if site.reached_from.code else ""),
            )
        )
    if site.also_at:
        out.append(Field("also at", ", ".join(prose.location(a, display) for a in site.also_at)))
    if site.explanation:
        out.append(Field("explanation", site.explanation))
    note = prose.skipped_note(site)
    if note:
        out.append(Field("skipped frame", f"{note}: the frame runs in eager"))
    if entry.causes:
        out.append(
            Field(
                "causes",
                "; ".join(
                    f"{c.id} {c.gb_code or '?'} {c.gb_type} at {prose.location(c.where, display)}"
                    for c in entry.causes
                ),
            )
        )
    if site.compile_ids:
        out.append(Field("splits graphs", ", ".join(site.compile_ids)))
    out.append(
        Field(
            "per call",
            f"runs {entry.occurrences_per_call:g}x; owns {fmt_ms(entry.gap_ms)} ms of eager time",
        )
    )
    out.append(
        Field(
            "cost parts",
            f"overhead {fmt_ms(parts.overhead_ms)} ms + tensor work "
            f"{fmt_ms(parts.tensor_work_ms)} ms (of which {fmt_ms(parts.kept_ms)} ms "
            f"compute-bound) + Python {fmt_ms(parts.python_work_ms)} ms",
        )
    )
    if d is not None:
        unc = f" ± {fmt_ms(entry.cost_uncertainty_ms)}" if entry.cost_uncertainty_ms else ""
        out.append(
            Field(
                "cost",
                f"{fmt_ms(entry.cost_ms)}{unc} ms/call "
                f"({fmt_pct(entry.cost_share)} of the default-mode step)",
            )
        )
        out.append(Field("fix options", prose.savings_line(entry)))
        label = f"{prose.verdict_label(d)} ({prose.category_title(d.category)})"
        out.append(Field("verdict", label))
        out.append(Field("why", prose.why(entry, report)))
    out.append(Field("evidence", prose.evidence(entry)))
    w = report.what_if(entry.what_if_knob)
    if w is not None:
        out.append(Field("what if", prose.what_if_line(w)))
        warning = prose.behaviour_warning(w)
        if warning:
            out.append(Field("behaviour change", warning))
    if site.doc_url:
        out.append(Field("registry page", site.doc_url))
    return out


def _coverage(report: Report) -> str | None:
    att = report.attribution
    if att.coverage is None:
        return None
    return (
        f"{fmt_pct(att.coverage)} of profiled call time attributed to segments, over "
        f"{att.profiled_calls} profiled calls"
    )


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


def action_rows(view: ReportView) -> list[tuple[str, ...]]:
    return [
        (str(a.rank), a.title, a.saving, "measured" if a.measured else "estimated", a.breaks)
        for a in view.actions
    ]


ACTION_HEADERS = ("#", "what to do", "saving", "basis", "removes")
