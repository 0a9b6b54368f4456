"""A hand-made report with every record filled in, for the model, render and compare tests."""

from __future__ import annotations

from advisor.core.artifacts import Capture, Measurements
from advisor.core.model import (
    Action,
    Attribution,
    BreakEntry,
    BreakSite,
    Calibration,
    CallTimeline,
    CostParts,
    CostTerms,
    Decision,
    Environment,
    GraphRecord,
    LatencyStats,
    Ledger,
    Location,
    ModeError,
    ModeResult,
    Note,
    RecompileAdvice,
    Report,
    Savings,
    Segment,
    Settings,
    WhatIf,
    WorkloadInfo,
)

FILE = "/home/u/proj/demo.py"


def print_site() -> BreakSite:
    return BreakSite(
        id="B1",
        gb_code="GB0059",
        gb_type="Failed to trace builtin operator",
        where=Location(FILE, 7, "trace", "print(x)"),
        explanation="expl",
        hints=("hint a", "hint b"),
        reached_from=None,
        also_at=(Location(FILE, 12, "forward", "trace(x)"),),
        compile_ids=("0/0", "1/0"),
        doc_url="https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html",
    )


def print_entry() -> BreakEntry:
    return BreakEntry(
        id="B1",
        site=print_site(),
        occurrences_per_call=2.0,
        terms=CostTerms(2.0, 2.0, 1.5, 5.0, 6.0, 4.0, 10.0, 0.0, 0.0, 1.0),
        parts=CostParts(0.033, 0.0, 0.0, 0.002),
        savings=Savings(0.033, None, 0.035),
        cost_ms=0.033,
        cost_share=0.066,
        cost_uncertainty_ms=0.001,
        decision=Decision(
            verdict="isolate",
            category="print",
            fix="isolate",
            basis="estimate",
            saving_ms=0.033,
            threshold_ms=0.005,
            noise_ms=0.002,
            reason="above",
        ),
        what_if_knob="reorderable_logging_functions={print}",
    )


def full_report() -> Report:
    return Report(
        workload=WorkloadInfo("demo", "demo.py:f", "cpu", (("size", "3"),)),
        environment=Environment(
            "2.13.0", "3.11.7", "Xeon", "Linux x86_64", 2, None, (0.5, 0.4, 0.3), (0, 1)
        ),
        settings=Settings(warmup=2, repeats=7, threads=1),
        modes=(
            ModeResult(
                "eager",
                "ok",
                0.1,
                LatencyStats(1.0, 0.1, 3, (0.9, 1.0, 1.1), 0.9, 1.1, 4, (0.9, 1.1), True),
                1024,
                "cpu_profiler",
            ),
            ModeResult(
                "default",
                "ok",
                5.0,
                LatencyStats(0.5, 0.05, 3, (0.5, 0.5, 0.6)),
                512,
                recompiles=1,
                matches_eager=True,
                max_abs_diff=1e-6,
                graph_count=2,
            ),
            ModeResult(
                "fullgraph",
                "failed",
                error=ModeError(
                    "Unsupported",
                    "Failed",
                    "GB0059",
                    "Failed to trace builtin operator",
                    FILE,
                    7,
                    "print(x)",
                ),
            ),
        ),
        graphs=(GraphRecord("0/0", "f", FILE, (5, 6), 3, 0.2, None, "graph_break"),),
        sites=(print_site(),),
        breaks=(print_entry(),),
        what_ifs=(
            WhatIf(
                "reorderable_logging_functions={print}",
                "reorderable_logging_functions",
                "isolate",
                "measured",
                targets=("B1",),
                removed=(),
                remaining=1,
                baseline_ms=0.5,
                variant_ms=0.49,
                saving_ms=0.01,
                saving_ci_ms=(-0.01, 0.03),
                rounds=7,
                target_met=True,
                matches_eager=True,
                stdout_chars=(10, 10),
            ),
        ),
        ledger=Ledger(
            step_ms=0.5,
            compiled_ms=0.44,
            breaks_ms=0.035,
            other_ms=0.025,
            saving_ms=0.033,
            projected_ms=0.467,
            eager_ms=1.0,
            projected_speedup_vs_eager=1.0 / 0.467,
            guard_lookup_ms=0.01,
        ),
        actions=(
            Action(
                kind="isolate",
                saving_ms=0.033,
                saving_ci_ms=(0.032, 0.034),
                breaks=("B1",),
                fix="isolate",
                where=Location(FILE, 7, "trace", "print(x)"),
            ),
            Action(kind="dynamic", saving_ms=None, dims=(0,), compile_s=0.3),
        ),
        attribution=Attribution(
            0.99,
            2,
            Calibration(overhead_us_per_event=1.7, reference="sessions", sessions=4),
            (
                CallTimeline(
                    0,
                    50.0,
                    (
                        Segment("entry", 0.0, 2.0),
                        Segment("compiled", 2.0, 40.0, "0/0", work_us=30.0),
                        Segment("gap", 42.0, 8.0, "0/0", "B1"),
                    ),
                ),
            ),
        ),
        recompiles=(RecompileAdvice("0/1", "f", "size mismatch at index 0", "size", 0, 0.3),),
        warnings=(
            Note("budget_short", values={"rounds": 3, "repeats": 20, "budget_s": 1.0}),
            Note("probe_failed", detail="RuntimeError: no C++ compiler"),
        ),
        created_at="2026-11-30T10:00:00",
        wall_s=12.5,
    )


def measurements_of(report: Report) -> Measurements:
    """Measurements that judge to a report like `report` in what was measured (its modes,
    graphs, sites, what-ifs), with no profile: enough for writing and reading them back."""
    return Measurements(
        report.workload,
        report.environment,
        report.settings,
        report.modes,
        Capture(graphs=report.graphs, sites=report.sites),
        what_ifs=report.what_ifs,
        notes=report.warnings,
        created_at=report.created_at,
        wall_s=report.wall_s,
    )
