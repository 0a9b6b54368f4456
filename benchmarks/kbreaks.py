"""The k-breaks micro-benchmark: the runtime price of one graph break, measured unprofiled.

A chain of 24 tiny elementwise ops on a 16-element tensor with k `torch._dynamo.graph_break()`
calls spread evenly through it (straight-line code: no loop, so no frame skip). Compiled with
Inductor, each break adds one compiled region, one guard lookup and one resume call but no
work, so the slope of per-call time against k is the fixed cost of a break on this machine.
"""

from __future__ import annotations

import importlib.util
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from advisor.core.model import Settings
from advisor.measure import timing as measure_timing

N_OPS = 24


def make_function(k: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """Straight-line function with k evenly spaced breaks, written to a real file (so each break
    has its own user file:line, as in real code) and imported."""
    positions = {round((i + 1) * N_OPS / (k + 1)) for i in range(k)}
    lines = ["import torch", "", "", f"def kbreaks_{k}(x):"]
    ops = ("x = x.sin()", "x = x * 1.01", "x = x + 0.5", "x = x.cos()")
    for i in range(N_OPS):
        if i in positions:
            # text of the generated program, not a call made here: torch 2.11-2.13 have no
            # public spelling of an explicit break (torch.compiler has none)
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


def measure_slope(
    ks: tuple[int, ...] = (0, 2, 4, 8), settings: Settings | None = None
) -> tuple[float, dict[int, float]]:
    """(µs per break, median per-call µs for each k), Inductor, unprofiled.

    Timed with the harness's own method (warm-up, blocks of at least min_block_s, the k values
    interleaved round by round, median), so the slope uses the same statistic as the
    default-mode medians the advisor's cost model is scaled to.
    """
    from advisor.measure import torch_adapter

    settings = settings or Settings(warmup=3, repeats=15, min_block_s=0.02, budget_s=60.0)
    torch_adapter.reset_dynamo()
    x = torch.randn(16)
    calls = []
    for k in ks:
        compiled = torch.compile(make_function(k), backend="inductor")
        compiled(x)
        calls.append((str(k), lambda c=compiled: c(x)))
    timing = measure_timing.interleaved_samples(calls, settings, measure_timing.WallTimer())
    per_call = {int(k): lat.median_ms * 1e3 for k, lat in timing.stats.items()}
    slope = float(np.polyfit(list(per_call), list(per_call.values()), 1)[0])
    return slope, per_call
