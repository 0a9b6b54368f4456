"""What a replicated `advisor run` costs in wall time, against `--quick` and, optionally, against
another checkout of advisor (an earlier commit) on the same targets in the same minutes.

For each target, one after the other: the other checkout's replicated run (when given), this
checkout's replicated run, this checkout's `--quick` run; each a plain `advisor run TARGET
--out DIR` in a process of its own, timed from outside (the wall time a user waits), with the
run's own `wall_s` and the median first call (compile + first run) of each arm's workers read
from its measurements.json. Runs go to a scratch folder; the table to
reports/benchmarks/run_cost/.

    python -m benchmarks.run_cost                              # this checkout only
    python -m benchmarks.run_cost --before-tree /path/to/old   # also an earlier checkout

Run it alone on the machine: every number here is a wall time.
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

from tabulate import tabulate

from benchmarks.machine import load1
from benchmarks.study_output import write_study

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "reports" / "benchmarks" / "run_cost"
TARGETS = ("print_logging", "moe_nonzero_routing", "train_branch")


def _commit(tree: Path) -> str:
    proc = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    dirty = subprocess.run(
        ["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def timed_run(tree: Path, target: str, quick: bool, folder: Path) -> dict[str, Any]:
    """One `advisor run` of `target` with the advisor of `tree`, timed from outside."""
    command = [sys.executable, "-m", "advisor", "run", target, "--out", str(folder)]
    command += ["--quick"] if quick else []
    env = {**os.environ, "PYTHONPATH": str(tree)}
    load = load1()
    started = time.perf_counter()
    proc = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    row: dict[str, Any] = {
        "target": target,
        "protocol": "quick" if quick else "replicated",
        "commit": _commit(tree),
        "wall_s": wall,
        "load1_at_start": load,
        "exit": proc.returncode,
    }
    measurements = folder / "measurements.json"
    if proc.returncode != 0 or not measurements.is_file():
        row["error"] = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return row
    data = json.loads(measurements.read_text())
    row["run_wall_s"] = data.get("wall_s")
    row["first_calls_s"] = _first_calls(data)
    return row


def _first_calls(data: dict[str, Any]) -> dict[str, float]:
    """Each arm's median worker first call (replicated), or its one first call (quick)."""
    out: dict[str, float] = {}
    for mode in data.get("modes", []):
        latency = mode.get("latency") or {}
        replication = latency.get("replication") or {}
        calls = replication.get("first_call_s") or (
            [mode["first_call_s"]] if mode.get("first_call_s") is not None else []
        )
        if calls:
            out[mode["mode"]] = statistics.median(calls)
    for index, what_if in enumerate(data.get("what_ifs", [])):
        calls = (what_if.get("replication") or {}).get("first_call_s") or []
        if calls:
            out[f"{what_if.get('kind')}#{index}"] = statistics.median(calls)
    return out


def measure(targets: tuple[str, ...], before: Path | None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="advisor-run-cost-") as scratch:
        for target in targets:
            plan = [(before, False, "before")] if before is not None else []
            plan += [(ROOT, False, "after"), (ROOT, True, "after")]
            for index, (tree, quick, label) in enumerate(plan):
                assert tree is not None
                folder = Path(scratch) / f"{target}-{index}"
                row = timed_run(tree, target, quick, folder)
                row["label"] = label
                print(f"{target} {label} {row['protocol']}: {row['wall_s']:.1f} s", flush=True)
                rows.append(row)
    return rows


def markdown(rows: list[dict[str, Any]], started: str) -> str:
    table = [
        [
            r["target"],
            f"{r['label']} ({r['commit']})",
            r["protocol"],
            f"{r['wall_s']:.1f}",
            _first_call_range(r),
            f"{r['load1_at_start']:.2f}" if r.get("load1_at_start") is not None else "-",
            r.get("error", "ok"),
        ]
        for r in rows
    ]
    headers = ["target", "advisor", "protocol", "wall s", "first calls s (arm medians)", "load1"]
    headers.append("")
    return (
        "# What an `advisor run` costs in wall time\n\n"
        f"`python -m benchmarks.run_cost`, started {started}: each target's runs one after the "
        "other, each timed from outside; first calls are each arm's median worker compile + "
        "first run (replicated) or the one process's (quick).\n\n"
        + tabulate(table, headers=headers, tablefmt="github")
        + "\n"
    )


COMPILED_FIRST_CALL_S = 0.2  # eager's and the reference's first calls compile nothing


def compiled_first_calls(row: dict[str, Any]) -> list[float]:
    """The median first calls of a run's arms that compiled something."""
    calls = (row.get("first_calls_s") or {}).values()
    return [c for c in calls if c > COMPILED_FIRST_CALL_S]


def _first_call_range(row: dict[str, Any]) -> str:
    compiled = compiled_first_calls(row)
    if not compiled:
        return "-"
    return f"{min(compiled):.2f}-{max(compiled):.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", default=list(TARGETS))
    parser.add_argument("--before-tree", type=Path, help="another checkout of advisor to time")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if args.before_tree is not None and not (args.before_tree / "advisor").is_dir():
        print(f"run_cost: {args.before_tree} holds no advisor/ package", file=sys.stderr)
        return 2
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    rows = measure(tuple(args.targets), args.before_tree)
    data = {"started": started, "rows": rows}
    write_study(args.out, "run_cost", data, markdown(rows, started))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
