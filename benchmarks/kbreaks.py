"""The k-breaks micro-benchmark: the runtime price of one graph break, measured unprofiled.

A chain of 24 tiny elementwise ops on a 16-element tensor with k `torch._dynamo.graph_break()`
calls spread evenly through it (straight-line code: no loop, so no frame skip). Compiled with
Inductor, each break adds one compiled region, one guard lookup and one resume call but no
work, so the slope of per-call time against k is the fixed cost of a break on this machine.
"""

from __future__ import annotations

import importlib.util
import math
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

N_OPS = 24


def make_function(k: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """Straight-line function with k evenly spaced breaks, written to a real file (so each break
    has its own user file:line, as in real code) and imported."""
    positions = {round((i + 1) * N_OPS / (k + 1)) for i in range(k)}
    lines = ["import torch", "", "", f"def kbreaks_{k}(x):"]
    ops = ("x = x.sin()", "x = x * 1.01", "x = x + 0.5", "x = x.cos()")
    for i in range(N_OPS):
        if i in positions:
            lines.append("    torch._dynamo.graph_break()")
        lines.append("    " + ops[i % len(ops)])
    lines.append("    return x")
    folder = Path(tempfile.gettempdir()) / "advisor_kbreaks"
    folder.mkdir(exist_ok=True)
    path = folder / f"kbreaks_{k}.py"
    path.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location(f"advisor_kbreaks_{k}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, f"kbreaks_{k}")


def min_of_rounds_us(calls: dict[int, Callable[[], Any]], n: int, rounds: int) -> dict[int, float]:
    """Per-call time, min over interleaved rounds of n calls each (interference only adds)."""
    best = {k: math.inf for k in calls}
    for _ in range(rounds):
        for k, call in calls.items():
            start = time.perf_counter_ns()
            for _ in range(n):
                call()
            best[k] = min(best[k], (time.perf_counter_ns() - start) / 1e3 / n)
    return best


def measure_slope(
    ks: tuple[int, ...] = (0, 2, 4, 8), n: int = 500, rounds: int = 7
) -> tuple[float, dict[int, float]]:
    """(µs per break, per-call µs for each k), Inductor, unprofiled."""
    from advisor import torch_adapter

    torch_adapter.reset_dynamo()
    x = torch.randn(16)
    calls = {}
    for k in ks:
        compiled = torch.compile(make_function(k), backend="inductor")
        compiled(x)
        calls[k] = lambda c=compiled: c(x)
    per_call = min_of_rounds_us(calls, n, rounds)
    slope = float(np.polyfit(list(per_call), list(per_call.values()), 1)[0])
    return slope, per_call
