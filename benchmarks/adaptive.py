"""Adaptive sampling benchmark: the spread and precision each scenario reaches with a fixed
number of rounds and with adaptive sampling, the blocks it takes and the wall time it costs.

Per scenario, eager and the default mode (Inductor, compiled once) are timed with the harness's
own method three ways, in an order that rotates from scenario to scenario:
- fixed: exactly 20 interleaved rounds (`--target-ci 0`, the old behaviour);
- adaptive: at least 20 rounds, then more until each median's 95% interval is within ±2% of it,
  or the 30 s budget runs out (the default);
- adaptive, pinned: the same with `--threads 1`: one torch thread, the process pinned to one CPU.
IQR/median is the spread of the samples: more samples describe it better but do not shrink it.
What adaptive sampling buys is the precision of the median (its 95% interval).

Run from the repository root (about 15 minutes on 2 CPU cores):

    .venv/bin/python -m benchmarks.adaptive
    .venv/bin/python -m benchmarks.adaptive print_logging clean_mlp

Results go to a new folder reports/benchmarks/adaptive-<time>/ (adaptive.md, adaptive.json).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from advisor.core.model import Settings, to_jsonable
from advisor.measure import cpus, environment, harness, torch_adapter
from advisor.measure import timing as measure_timing
from advisor.measure.quiet import filtered_native_stderr, muted_dynamo_warnings
from advisor.measure.workload import load_target, scenario_info, scenario_names
from advisor.render import report_io
from benchmarks.machine import latency_summary, load1, wait_until_quiet

CONFIGS: dict[str, tuple[Settings, int | None]] = {
    "fixed": (Settings(target_ci=0.0), None),
    "adaptive": (Settings(), None),
    "adaptive, pinned": (Settings(), 1),
}
MODES = ("eager", "default")


@dataclasses.dataclass(frozen=True)
class Measured:
    scenario: str
    config: str
    load_before: float | None
    timing_wall_s: float  # the steady-state timing alone (warm-up and block sizing included)
    modes: dict[str, dict[str, Any]]
    warnings: list[str]


def warm_calls(name: str) -> list[tuple[str, Callable[[], Any]]]:
    torch_adapter.reset_dynamo()
    workload = load_target(name, "cpu")
    backend = torch_adapter.InductorBackend("default")
    compiled = harness.compiled_call(workload, backend, False)
    with muted_dynamo_warnings(), filtered_native_stderr():
        for _ in range(3):
            workload()
            compiled()
    return [("eager", workload.__call__), ("default", compiled)]


def time_config(scenario: str, config: str, calls: list[tuple[str, Callable[[], Any]]]) -> Measured:
    settings, threads = CONFIGS[config]
    load = load1()
    with cpus.pinned(threads), muted_dynamo_warnings(), filtered_native_stderr():
        start = time.perf_counter()
        timing = measure_timing.interleaved_samples(calls, settings, measure_timing.WallTimer())
        wall = time.perf_counter() - start
    modes = {mode: latency_summary(lat) for mode, lat in timing.stats.items()}
    print(
        f"  {config}: {wall:.1f} s, "
        + ", ".join(f"{m} {d['blocks']} blocks ±{(d['ci_half_width'] or 0) * 100:.1f}%"
                    for m, d in modes.items()),
        file=sys.stderr, flush=True,
    )  # fmt: skip
    return Measured(scenario, config, load, wall, modes, timing.warnings)


def run_scenario(name: str, index: int) -> list[Measured]:
    print(f"[{name}]", file=sys.stderr, flush=True)
    calls = warm_calls(name)
    order = list(CONFIGS)
    order = order[index % len(order) :] + order[: index % len(order)]
    return [time_config(name, config, calls) for config in order]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _cell(m: dict[str, Any] | None) -> str:
    if m is None:
        return "-"
    met = {True: "met", False: "NOT met", None: "no target"}[m["target_met"]]
    return (
        f"IQR {_pct(m['iqr_over_median'])}; ±{_pct(m['ci_half_width'])} ({met}); "
        f"{m['blocks']} blocks"
    )


def summary_rows(results: list[Measured]) -> list[list[str]]:
    """Per scenario: fixed vs adaptive, per mode, and the extra wall time."""
    by = {(r.scenario, r.config): r for r in results}
    rows = []
    for scenario in dict.fromkeys(r.scenario for r in results):
        fixed, adaptive = by.get((scenario, "fixed")), by.get((scenario, "adaptive"))
        if fixed is None or adaptive is None:
            continue
        for mode in MODES:
            f, a = fixed.modes.get(mode), adaptive.modes.get(mode)
            if f is None or a is None:
                continue
            rows.append(
                [scenario, mode, _pct(f["iqr_over_median"]), _pct(a["iqr_over_median"]),
                 f"±{_pct(f['ci_half_width'])}", f"±{_pct(a['ci_half_width'])}",
                 str(f["blocks"]), str(a["blocks"]), "yes" if a["target_met"] else "NO",
                 f"{adaptive.timing_wall_s - fixed.timing_wall_s:+.1f}"]
            )  # fmt: skip
    return rows


SUMMARY_HEADERS = ("scenario", "mode", "IQR/median fixed", "IQR/median adaptive",
                   "median 95% CI fixed", "median 95% CI adaptive", "blocks fixed",
                   "blocks adaptive", "target met", "extra wall s")  # fmt: skip


def render(results: list[Measured], header: list[str]) -> str:
    from tabulate import tabulate

    def table(headers: tuple[str, ...], rows: list[list[str]]) -> str:
        return tabulate(rows, headers=list(headers), tablefmt="github", disable_numparse=True)

    detail = [
        [r.scenario, r.config, "-" if r.load_before is None else f"{r.load_before:.2f}",
         f"{r.timing_wall_s:.1f}", *(_cell(r.modes.get(m)) for m in MODES)]
        for r in results
    ]  # fmt: skip
    return "\n".join([
        *header, "", "## Fixed 20 rounds vs adaptive (±2% target, 30 s budget)", "",
        table(SUMMARY_HEADERS, summary_rows(results)), "",
        "extra wall s: the adaptive timing's wall time minus the fixed one's, per scenario "
        "(both modes timed together).", "",
        "## Every timing, with the pinned variant (`--threads 1`)", "",
        table(("scenario", "config", "load before", "timing wall s", *MODES), detail),
    ]) + "\n"  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*")
    parser.add_argument("--wait", type=float, default=600.0, help="most seconds to wait for quiet")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    # a scenario that needs data-parallel ranks (train_ddp) is measured with `--ranks`, not here
    names = args.scenarios or [n for n in scenario_names() if scenario_info(n).ranks == 1]
    out = args.out or report_io.default_run_dir(Path("reports/benchmarks"), "adaptive")
    report_io.check_writable(out, ("adaptive.md", "adaptive.json"))
    quiet = wait_until_quiet(args.wait)
    started = time.perf_counter()
    results = [m for i, name in enumerate(names) for m in run_scenario(name, i)]
    wall = time.perf_counter() - started
    torch_adapter.reset_dynamo()
    env = environment.describe("cpu")
    header = [
        "# Adaptive sampling: spread, precision and wall time per scenario",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M')} on {env.device_name}, {env.cpu_threads} "
        f"threads, torch {env.torch}, Python {env.python}; {quiet.note()}; load average at the "
        f"end {', '.join(f'{v:.2f}' for v in env.load_average)}. Wall time {wall / 60:.1f} min.",
    ]
    text = render(results, header)
    payload = {
        "environment": to_jsonable(env),
        "quiet": quiet.note(),
        "wall_s": wall,
        "configs": {k: [to_jsonable(s), t] for k, (s, t) in CONFIGS.items()},
        "results": [dataclasses.asdict(r) for r in results],
    }
    report_io.write_files(
        out, {"adaptive.md": text, "adaptive.json": json.dumps(payload, indent=2)}
    )
    print(text)
    print(f"written to {out}/", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
