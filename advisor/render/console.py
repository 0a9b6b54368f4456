"""Terminal summary (tabulate)."""

from __future__ import annotations

from tabulate import tabulate

from advisor.model import Report
from advisor.render.common import (
    MODE_HEADERS,
    fmt_ms,
    fmt_pct,
    fullgraph_finding,
    location,
    mode_rows,
)


def render_text(report: Report) -> str:
    wl = report.workload
    env = report.environment
    out = [
        f"advisor: {wl.name} ({wl.target}) on {wl.device} [{env.device_name}], torch {env.torch}",
        "",
        tabulate(mode_rows(report), headers=MODE_HEADERS, tablefmt="simple"),
    ]
    finding = fullgraph_finding(report)
    if finding:
        out += ["", finding]
    if report.breaks:
        rows = [
            [
                i,
                b.gb_code or "?",
                b.gb_type[:38],
                location(b),
                (b.code or "")[:40],
                f"{b.occurrences_per_call:g}",
                fmt_ms(b.gap_ms),
                fmt_ms(b.cost_ms),
                fmt_pct(b.cost_share),
                b.verdict or "-",
            ]
            for i, b in enumerate(report.breaks, 1)
        ]
        headers = [
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
        ]
        out += [
            "",
            f"Graph breaks ({len(report.breaks)}), ranked by cost per call:",
            tabulate(rows, headers=headers, tablefmt="simple"),
        ]
        for i, b in enumerate(report.breaks, 1):
            if b.verdict and b.recipe:
                out.append(f"  {i}. {b.verdict}: {b.recipe.splitlines()[0]}")
    elif report.mode("default") is not None:
        out += ["", f"No graph breaks captured ({len(report.graphs)} graph(s))."]
    if report.recompiles:
        out += ["", f"Recompiles ({len(report.recompiles)}):"]
        out += [f"  {r.compile_id} {r.function}: {r.reason}" for r in report.recompiles]
    if report.attribution.coverage is not None:
        out += [
            "",
            f"Attribution coverage: {fmt_pct(report.attribution.coverage)} of profiled "
            f"call time over {report.attribution.profiled_calls} calls",
        ]
    for warning in report.warnings:
        out.append(f"warning: {warning}")
    return "\n".join(out)
