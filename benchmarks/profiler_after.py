"""Does a process run slower after a profiler session has ended? A replicated arm's first worker
takes its peak memory with one call under `torch.profiler` (`profile_memory=True`) before its
timed blocks (`advisor/measure/arms.py`); this checks that the call leaves no lasting cost.

    python -m benchmarks.profiler_after [--models kornia_cnn,llama] [--rounds 4]

Each process builds one training-zoo step, eager (`benchmarks/trainzoo/placed.py`), warms it and
times blocks of it, then, by its condition, runs one call under the profiler with memory
(`memory`), one without (`profile`), or one plain call (`none`, the control), and times as many
blocks again. A process's figure is the median of its blocks after over the median before; the
conditions of a model run in fresh processes each, rotated by round (rounds outermost), one
pinned thread. Writes reports/benchmarks/profiler_after/.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tabulate import tabulate

from benchmarks.reference_ab_stats import mean_interval
from benchmarks.study_output import write_study

CONDITIONS = ("none", "profile", "memory")
OUT = Path("reports/benchmarks/profiler_after")
BLOCKS = 5  # blocks before and after the profiled call
BLOCK_S = 0.3  # seconds per block, about


def child(model: str, condition: str) -> dict[str, Any]:
    """One process: blocks of the eager step, the condition's call, blocks again (ms/step)."""
    import torch

    from benchmarks.trainzoo import placed

    torch.set_num_threads(1)
    step, args = placed.eager(model=model)
    for _ in range(3):
        step(*args)
    started = time.perf_counter()
    step(*args)
    number = max(1, int(BLOCK_S / max(time.perf_counter() - started, 1e-6)))
    before = _blocks(step, args, number)
    if condition == "none":
        step(*args)
    else:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU], profile_memory=condition == "memory"):
            step(*args)
    return {"before_ms": before, "after_ms": _blocks(step, args, number), "number": number}


def _blocks(step: Any, args: tuple[Any, ...], number: int) -> list[float]:
    out = []
    for _ in range(BLOCKS):
        started = time.perf_counter()
        for _ in range(number):
            step(*args)
        out.append((time.perf_counter() - started) / number * 1e3)
    return out


def _spawn(model: str, condition: str, cpu: int | None) -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks.profiler_after", "--child", model, condition]
    if cpu is not None:
        command = ["taskset", "-c", str(cpu), *command]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"profiler_after: {model} {condition} failed: {tail}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(models: list[str], rounds: int, cpu: int | None) -> dict[str, Any]:
    """Each model's processes by condition, rounds outermost, conditions rotated per round."""
    found: dict[str, dict[str, list[dict[str, Any]]]] = {
        m: {c: [] for c in CONDITIONS} for m in models
    }
    for round_index in range(rounds):
        shift = round_index % len(CONDITIONS)
        for model in models:
            for condition in CONDITIONS[shift:] + CONDITIONS[:shift]:
                found[model][condition].append(_spawn(model, condition, cpu))
    return {"rounds": rounds, "blocks": BLOCKS, "models": found}


def summary(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Per model and condition: each process's after/before ratio of block medians, their mean
    and 95% interval, and the medians in ms."""
    rows = []
    for model, by_condition in data["models"].items():
        for condition, processes in by_condition.items():
            before = [statistics.median(p["before_ms"]) for p in processes]
            after = [statistics.median(p["after_ms"]) for p in processes]
            ratios = [a / b for a, b in zip(after, before, strict=True)]
            mean, ci = mean_interval(ratios)
            rows.append({
                "model": model,
                "condition": condition,
                "processes": len(processes),
                "before_ms": before,
                "after_ms": after,
                "ratios": ratios,
                "mean_ratio": mean,
                "ci95_ratio": ci,
            })  # fmt: skip
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    def ms(values: list[float]) -> str:
        return ", ".join(f"{v:.2f}" for v in values)

    table = [
        [r["model"], r["condition"], r["processes"], ms(r["before_ms"]), ms(r["after_ms"]),
         f"{r['mean_ratio']:.3f}"
         + (f" [{r['ci95_ratio'][0]:.3f}, {r['ci95_ratio'][1]:.3f}]" if r["ci95_ratio"] else "")]
        for r in rows
    ]  # fmt: skip
    headers = ["model (eager step)", "call between", "processes", "before ms", "after ms",
               "after / before, mean [95%]"]  # fmt: skip
    return (
        "# A process after a profiler session\n\n"
        "`python -m benchmarks.profiler_after`: each process times an eager training step, "
        "runs one call of it under `torch.profiler` (`memory`: with `profile_memory=True`; "
        "`profile`: without) or plainly (`none`), and times it again; fresh processes, "
        "conditions rotated by round, one pinned thread.\n\n"
        + tabulate(table, headers, tablefmt="github")
        + "\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="kornia_cnn,llama")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--cpu", type=int, default=None, help="pin the processes to this CPU")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "CONDITION"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    data = measure(args.models.split(","), args.rounds, args.cpu)
    rows = summary(data)
    write_study(args.out, "profiler_after", {**data, "summary": rows}, render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
