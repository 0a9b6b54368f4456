"""The Markdown report."""

from __future__ import annotations

from tabulate import tabulate

from advisor.model import BreakRecord, Report
from advisor.render.common import (
    MODE_HEADERS,
    fmt_ms,
    fmt_pct,
    fmt_s,
    fullgraph_finding,
    location,
    mode_rows,
    segment_summary,
    short_path,
)
from advisor.taxonomy import skipped_frame_note


def _table(rows: list[list[object]], headers: list[str]) -> str:
    return tabulate(rows, headers=headers, tablefmt="github")


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: Report) -> str:
    wl, env, st = report.workload, report.environment, report.settings
    out = [
        f"# advisor report: {wl.name}",
        "",
        f"- target: `{wl.target}`",
        f"- device: {wl.device} ({env.device_name}); torch {env.torch}; Python {env.python}; "
        f"{env.platform}; {env.cpu_threads} CPU threads",
        f"- measured {report.created_at}"
        + (f" in {report.wall_s:.1f} s" if report.wall_s is not None else ""),
        f"- harness: {st.warmup} warm-up calls, up to {st.repeats} interleaved rounds, "
        f"blocks of at least {st.min_block_s * 1e3:g} ms, budget {st.budget_s:g} s",
        "",
        "## Modes",
        "",
        _table(mode_rows(report), MODE_HEADERS),  # type: ignore[arg-type]
        "",
        "Latency: median of per-call means over timed blocks; IQR is the spread of those "
        "samples. First call includes compilation.",
    ]
    memory_methods = sorted({m.memory_method for m in report.modes if m.memory_method})
    if memory_methods:
        out.append("Peak memory: " + "; ".join(memory_methods) + ".")
    finding = fullgraph_finding(report)
    if finding:
        out += ["", f"**Finding:** {_escape(finding)}"]
    out += _breaks_section(report)
    out += _graphs_section(report)
    out += _recompiles_section(report)
    out += _attribution_section(report)
    if report.warnings:
        out += ["", "## Warnings", ""] + [f"- {_escape(w)}" for w in report.warnings]
    return "\n".join(out) + "\n"


def _breaks_section(report: Report) -> list[str]:
    out = ["", "## Graph breaks", ""]
    if not report.breaks:
        out.append("No graph breaks were captured in the default mode.")
        return out
    rows = [
        [
            i,
            f"[{b.gb_code}]({b.doc_url})" if b.gb_code and b.doc_url else (b.gb_code or "?"),
            _escape(b.gb_type),
            f"`{location(b)}`",
            f"`{_escape(b.code)}`" if b.code else "",
            f"{b.occurrences_per_call:g}",
            fmt_ms(b.gap_ms),
            fmt_ms(b.cost_ms),
            fmt_pct(b.cost_share),
            f"**{b.verdict}**" if b.verdict else "-",
        ]
        for i, b in enumerate(report.breaks, 1)
    ]
    out.append(
        _table(
            rows,
            [
                "#",
                "code",
                "type",
                "where",
                "source",
                "per call",
                "gap ms/call",
                "cost ms/call",
                "share",
                "verdict",
            ],
        )
    )
    for i, b in enumerate(report.breaks, 1):
        out += ["", f"### {i}. {b.gb_code or '?'} {b.gb_type} at `{location(b)}`", ""]
        out += _break_details(b)
    return out


def _break_details(b: BreakRecord) -> list[str]:
    out = []
    if b.code:
        out.append(f"- source: `{b.code}` in `{b.function}`")
    if b.outer_file and (b.outer_file, b.outer_line) != (b.file, b.line):
        out.append(
            f"- reached from `{short_path(b.outer_file)}:{b.outer_line}` ({b.outer_function})"
        )
    if b.break_file:
        out.append(f"- Dynamo stopped inside `{short_path(b.break_file)}:{b.break_line}`")
    if b.explanation:
        out.append(f"- explanation: {_escape(b.explanation)}")
    if b.frame_skipped:
        out.append(f"- {skipped_frame_note(b)}, so it runs in eager")
    if b.compile_ids:
        out.append(f"- splits graphs: {', '.join(b.compile_ids)}")
    out.append(
        f"- occurrences per call: {b.occurrences_per_call:g}; measured gap: "
        f"{fmt_ms(b.gap_ms)} ms/call"
    )
    if b.cost_ms is not None:
        unc = f" ± {fmt_ms(b.cost_uncertainty_ms)}" if b.cost_uncertainty_ms is not None else ""
        out.append(
            f"- estimated cost: {fmt_ms(b.cost_ms)}{unc} ms/call ({fmt_pct(b.cost_share)} "
            "of the default-mode step)"
        )
    if b.verdict:
        out.append(f"- verdict: **{b.verdict}**" + (f" ({b.category})" if b.category else ""))
    if b.why:
        out.append(f"- why: {_escape(b.why)}")
    if b.recipe:
        out += ["- recipe:", "", "  " + b.recipe.replace("\n", "\n  "), ""]
    if b.what_if is not None:
        w = b.what_if
        if w.status == "measured":
            out.append(
                f"- what if `{w.knob}`: measured {fmt_ms(w.baseline_ms)} → {fmt_ms(w.variant_ms)} "
                f"ms/call, saving {fmt_ms(w.saving_ms)} ± {fmt_ms(w.saving_noise_ms)} ms "
                f"(estimated {fmt_ms(w.estimated_saving_ms)}); break removed: {w.removes_break}; "
                f"matches eager: {w.matches_eager}"
            )
        else:
            out.append(f"- what if `{w.knob}`: {w.status}. {_escape(w.note)}")
        if w.behaviour_warning:
            out.append(f"- **behaviour change:** {_escape(w.behaviour_warning)}")
    for hint in b.hints:
        out.append(f"- registry hint: {_escape(hint)}")
    if b.doc_url:
        out.append(f"- registry page: {b.doc_url}")
    return out


def _graphs_section(report: Report) -> list[str]:
    if not report.graphs:
        return []
    rows = [
        [
            g.compile_id,
            g.function,
            f"`{short_path(g.file)}`",
            _line_span(g.lines),
            g.ops,
            fmt_s(g.compile_s),
            _escape(g.recompile_reason or ""),
        ]
        for g in report.graphs
    ]
    return [
        "",
        "## Compiled graphs",
        "",
        _table(
            rows,
            ["compile id", "function", "file", "lines", "ops", "compile s", "recompile reason"],
        ),
    ]


def _line_span(lines: tuple[int, ...]) -> str:
    if not lines:
        return "-"
    return f"{min(lines)}-{max(lines)}" if len(lines) > 1 else str(lines[0])


def _recompiles_section(report: Report) -> list[str]:
    if not report.recompiles:
        return []
    rows = [
        [r.compile_id, r.function, _escape(r.reason), fmt_s(r.compile_s), _escape(r.recommendation)]
        for r in report.recompiles
    ]
    return [
        "",
        "## Recompiles",
        "",
        _table(rows, ["compile id", "function", "reason", "compile s", "recommendation"]),
    ]


def _attribution_section(report: Report) -> list[str]:
    att = report.attribution
    if att.coverage is None and not att.calls:
        return []
    out = [
        "",
        "## Where a call's time goes",
        "",
        f"Coverage: {fmt_pct(att.coverage)} of profiled call time attributed to segments, "
        f"over {att.profiled_calls} profiled calls.",
    ]
    if att.method:
        out.append(f"Method: {att.method}")
    summary = segment_summary(report)
    if summary:
        rows = [[label, f"{us:.1f}", fmt_pct(share)] for label, us, share in summary]
        out += ["", _table(rows, ["segment", "µs per profiled call", "share"])]
    return out
