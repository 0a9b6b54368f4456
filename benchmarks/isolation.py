"""What `--isolate` costs: wall time of `advisor run SCENARIO` in-process and isolated.

Each run is the whole command as a user types it (a fresh `python -m advisor run ...`, torch
import included), so the isolated runs pay what isolation adds: a process per mode and what-if,
each importing torch, building the workload and warming Inductor up again. In-process and
isolated runs alternate, so drift of the machine hits both. It also records each mode's median
from both, since isolated modes are timed one after the other, not interleaved.

Run from the repository root (about 8 minutes on 2 CPU cores with the defaults):

    .venv/bin/python -m benchmarks.isolation                      # print_logging, 2 pairs
    .venv/bin/python -m benchmarks.isolation item_in_decode_loop --pairs 3

It waits (up to --wait-s seconds) for the 1-minute load average to fall below --max-load and
says in its result when it ran on a busier machine. Results go to a new folder
reports/benchmarks/isolation-<time>/ (isolation.md, isolation.json).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from advisor.render import report_io

# One pinned thread: with two torch threads on a busy 2-core machine, this benchmark once
# measured print_logging's eager median anywhere from 0.7 to 120 ms per call between runs.
RUN_OPTIONS = ["--threads", "1", "--repeats", "10", "--budget", "20", "--quiet"]


def wait_for_quiet(max_load: float, wait_s: float) -> tuple[float, bool]:
    """Poll the load average; (load when we start, whether it was below max_load)."""
    deadline = time.monotonic() + wait_s
    while True:
        load = os.getloadavg()[0]
        if load < max_load or time.monotonic() > deadline:
            return load, load < max_load
        time.sleep(15)


def timed_run(scenario: str, isolate: bool, folder: Path) -> dict[str, Any]:
    out = folder / f"{'isolated' if isolate else 'in-process'}-{time.time_ns()}"
    command = [sys.executable, "-m", "advisor", "run", scenario, "--out", str(out), *RUN_OPTIONS]
    if isolate:
        command.append("--isolate")
    load = os.getloadavg()[0]
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    wall_s = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{proc.stderr[-2000:]}")
    report = json.loads((out / "report.json").read_text())
    return {
        "isolate": isolate,
        "wall_s": round(wall_s, 2),
        "load_at_start": round(load, 2),
        "first_call_s": {m["mode"]: m["first_call_s"] for m in report["modes"]},
        "median_ms": {
            m["mode"]: m["latency"]["median_ms"] if m["latency"] else None for m in report["modes"]
        },
        "what_ifs": [w["knob"] for w in report["what_ifs"]],
    }


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    def of(isolate: bool) -> list[dict[str, Any]]:
        return [r for r in runs if r["isolate"] is isolate]

    inproc, isolated = of(False), of(True)
    wall_in = statistics.median(r["wall_s"] for r in inproc)
    wall_iso = statistics.median(r["wall_s"] for r in isolated)
    modes = sorted({m for r in runs for m in r["median_ms"]})
    medians = {
        mode: {
            "in_process_ms": _median([r["median_ms"].get(mode) for r in inproc]),
            "isolated_ms": _median([r["median_ms"].get(mode) for r in isolated]),
        }
        for mode in modes
    }
    return {
        "wall_in_process_s": wall_in,
        "wall_isolated_s": wall_iso,
        "extra_s": round(wall_iso - wall_in, 2),
        "ratio": round(wall_iso / wall_in, 2),
        "processes": 3 + len(isolated[0]["what_ifs"]) if isolated else 0,
        "mode_medians": medians,
    }


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def markdown(scenario: str, result: dict[str, Any]) -> str:
    s = result["summary"]
    quiet = f"load average {result['load_at_start']:.2f} at the start" + (
        "" if result["quiet"] else f" (above {result['max_load']}: the machine stayed busy)"
    )
    peak = max(r["load_at_start"] for r in result["runs"])
    if peak >= result["max_load"]:
        quiet += (
            f", up to {peak:.2f} before later runs (other work on the machine): the "
            "steady-state medians below swing with it and compare nothing"
        )
    lines = [
        f"# What `--isolate` costs: `advisor run {scenario}`",
        "",
        f"Measured {result['measured_at']} on {result['machine']}; {quiet}. Options: "
        f"`{' '.join(RUN_OPTIONS)}`; {len(result['runs'])} runs, in-process and isolated "
        "alternating. Wall time is the whole command (torch import included).",
        "",
        "| | in-process | isolated |",
        "|---|---|---|",
        f"| wall time, median (s) | {s['wall_in_process_s']:.1f} | {s['wall_isolated_s']:.1f} |",
        f"| processes | 1 | 1 + {s['processes']} |",
        "",
        f"Isolation added {s['extra_s']:.1f} s ({s['ratio']:.2f}x the in-process wall time).",
        "",
        "Runs (steady-state medians in ms per call; isolated modes are timed one after the other,",
        "not interleaved; on a shared machine they swing with the load, see the spread):",
        "",
        "| # | isolated | wall s | load at start | eager ms | default ms |",
        "|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(result["runs"], 1):
        medians = r["median_ms"]
        lines.append(
            f"| {i} | {r['isolate']} | {r['wall_s']:.1f} | {r['load_at_start']:.2f} | "
            f"{_ms(medians.get('eager'))} | {_ms(medians.get('default'))} |"
        )
    return "\n".join(lines) + "\n"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenario", nargs="?", default="print_logging")
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--max-load", type=float, default=1.5)
    parser.add_argument("--wait-s", type=float, default=1200.0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    out = args.out or report_io.default_run_dir(Path("reports/benchmarks"), "isolation")
    report_io.check_writable(out, ("isolation.md", "isolation.json"))
    load, quiet = wait_for_quiet(args.max_load, args.wait_s)
    runs = []
    with tempfile.TemporaryDirectory(prefix="advisor-isolation-") as folder:
        for pair in range(args.pairs):
            # alternate which goes first, so a trend in the load hits both alike
            for isolate in (pair % 2 == 1, pair % 2 == 0):
                runs.append(timed_run(args.scenario, isolate, Path(folder)))
                print(f"isolation: {runs[-1]['wall_s']} s (isolate={isolate})", file=sys.stderr)
    result = {
        "scenario": args.scenario,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": f"{os.cpu_count()} CPUs, {os.uname().machine}",
        "load_at_start": load,
        "quiet": quiet,
        "max_load": args.max_load,
        "runs": runs,
        "summary": summary(runs),
    }
    report_io.write_files(
        out,
        {
            "isolation.md": markdown(args.scenario, result),
            "isolation.json": json.dumps(result, indent=2),
        },
    )
    print(f"isolation: written to {out}/", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
