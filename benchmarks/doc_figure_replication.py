"""The figures docs/measurement.md quotes: the replicated protocol on print_logging, run three
times and once with --quick, from the committed report.json of each run
(reports/benchmarks/replication/, written by `advisor run`), and what a run costs in wall time
(reports/benchmarks/run_cost/, written by `benchmarks.run_cost`); nothing here measures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.doc_figure_base import Figure, resolve, span
from benchmarks.run_cost import compiled_first_calls

FOLDER = "reports/benchmarks/replication"
RUNS = {str(n): f"{FOLDER}/print_logging-{n}.json" for n in (1, 2, 3)}
QUICK = f"{FOLDER}/print_logging-quick.json"
RUN_COST = "reports/benchmarks/run_cost/run_cost.json"


def _rep(report: dict[str, Any], mode: str) -> dict[str, Any]:
    return resolve(report, f"modes[mode={mode}].latency.replication")


def _medians(mode: str) -> Callable[[Any], str]:
    def make(report: dict[str, Any]) -> str:
        return ", ".join(f"{v:.4f}" for v in _rep(report, mode)["process_medians_ms"]) + " ms"

    return make


def _spread(mode: str) -> Callable[[Any], str]:
    """Range of the process medians over their median."""

    def make(report: dict[str, Any]) -> str:
        values = sorted(_rep(report, mode)["process_medians_ms"])
        centre = resolve(report, f"modes[mode={mode}].latency.median_ms")
        return f"{(values[-1] - values[0]) / centre:.1%}"

    return make


def _over_eager(report: dict[str, Any]) -> str:
    """The default mode's process median over eager's of the same wave, wave by wave: the
    machine's drift between waves cancels, the processes' own differences stay."""
    default, eager = _rep(report, "default"), _rep(report, "eager")
    eager_by_wave = dict(zip(eager["waves"], eager["process_medians_ms"], strict=True))
    ratios = [
        d / eager_by_wave[w]
        for w, d in zip(default["waves"], default["process_medians_ms"], strict=True)
        if w in eager_by_wave
    ]
    return ", ".join(f"{r:.3f}" for r in ratios)


def _savings(kind: str) -> Callable[[Any], str]:
    """A what-if's per-wave savings, as shares of the step."""

    def make(report: dict[str, Any]) -> str:
        w = next(w for w in report["what_ifs"] if w["kind"] == kind)
        step = report["ledger"]["step_ms"]
        return ", ".join(f"{v / step:.1%}" for v in w["process_savings_ms"])

    return make


def _saving(kind: str) -> Callable[[Any], str]:
    """A what-if's saving and interval, in ms and as a share of the step."""

    def make(report: dict[str, Any]) -> str:
        w = next(w for w in report["what_ifs"] if w["kind"] == kind)
        low, high = w["saving_ci_ms"]
        share = w["saving_ms"] / w["baseline_ms"]
        return f"{w['saving_ms']:.4f} ms [{low:.4f}, {high:.4f}] ({share:.1%})"

    return make


def _within(mode: str) -> Callable[[Any], str]:
    """The relative IQR of the pooled blocks (the spread inside processes, with theirs)."""

    def make(report: dict[str, Any]) -> str:
        latency = resolve(report, f"modes[mode={mode}].latency")
        return f"{latency['iqr_ms'] / latency['median_ms']:.1%}"

    return make


def _first_calls(report: dict[str, Any]) -> str:
    """Compile plus first call of the default arm's processes (the caches warm)."""
    return span(_rep(report, "default")["first_call_s"], "{:.1f}", " s")


def _shape(report: dict[str, Any]) -> str:
    rep = _rep(report, "default")
    return f"{rep['processes']} processes x {rep['rounds']} rounds"


def _first_action(report: dict[str, Any]) -> str:
    action = report["actions"][0]
    if action["saving_ci_ms"] is None or not action["measured"]:
        return f"{action['kind']} (estimated)"
    low, high = action["saving_ci_ms"]
    share = action["saving_ms"] / report["ledger"]["step_ms"]
    return (
        f"{action['kind']}, {action['saving_ms']:.4f} ms [{low:.4f}, {high:.4f}] "
        f"({share:.1%} of the step)"
    )


# What docs/measurement.md quotes of each run: all of run 1, the headline of the others.
QUOTED = {
    "1": (
        "wall",
        "shape",
        "default_medians",
        "eager_medians",
        "default_spread",
        "eager_spread",
        "default_iqr",
        "over_eager",
        "noop_savings",
        "noop_saving",
        "first_calls",
        "first_action",
    ),
    "2": ("wall", "shape", "over_eager", "noop_saving", "first_action"),
    "3": ("wall", "shape", "over_eager", "noop_saving", "first_action"),
}


def _run_figure(name: str) -> Callable[[Any], str]:
    made: dict[str, Callable[[Any], str]] = {
        "wall": lambda r: f"{r['wall_s']:.0f} s",
        "shape": _shape,
        "default_medians": _medians("default"),
        "eager_medians": _medians("eager"),
        "default_spread": _spread("default"),
        "eager_spread": _spread("eager"),
        "default_iqr": _within("default"),
        "over_eager": _over_eager,
        "noop_savings": _savings("noop"),
        "noop_saving": _saving("noop"),
        "first_calls": _first_calls,
        "first_action": _first_action,
    }
    return made[name]


def _cost_walls(data: dict[str, Any]) -> str:
    """Per target: the earlier checkout's replicated wall time -> this one's (and --quick's)."""
    parts = []
    for target in dict.fromkeys(r["target"] for r in data["rows"]):
        rows = {
            (r["label"], r["protocol"]): r["wall_s"] for r in data["rows"] if r["target"] == target
        }
        before = rows.get(("before", "replicated"))
        after, quick = rows[("after", "replicated")], rows[("after", "quick")]
        then = f"{before:.0f} -> " if before is not None else ""
        parts.append(f"{target} {then}{after:.0f} s (--quick {quick:.0f} s)")
    return "; ".join(parts)


def _cost_first_calls(label: str) -> Callable[[Any], str]:
    """The range of the compiling arms' median first calls over every target's replicated run."""

    def make(data: dict[str, Any]) -> str:
        calls = [
            s
            for r in data["rows"]
            if r["label"] == label and r["protocol"] == "replicated"
            for s in compiled_first_calls(r)
        ]
        return f"{min(calls):.1f}-{max(calls):.1f} s"

    return make


def figures() -> dict[str, Figure]:
    out: dict[str, Figure] = {
        "run_cost.walls": Figure(RUN_COST, _cost_walls),
        "run_cost.first_calls_before": Figure(RUN_COST, _cost_first_calls("before")),
        "run_cost.first_calls_after": Figure(RUN_COST, _cost_first_calls("after")),
        "replication.quick_wall": Figure(QUICK, lambda r: f"{r['wall_s']:.0f} s"),
        "replication.quick_first_action": Figure(QUICK, _first_action),
        "replication.quick_noop_saving": Figure(QUICK, _saving("noop")),
    }
    for run, source in RUNS.items():
        for name in QUOTED[run]:
            out[f"replication.run{run}.{name}"] = Figure(source, _run_figure(name))
    return out
