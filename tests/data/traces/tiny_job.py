"""A tiny "user job" for the trace-reader tests: a step with two graph breaks (a data-dependent
branch and a `torch.compiler.disable` helper), compiled, run under `torch.profiler` with a
schedule and `prof.step()`, its Chrome trace exported. `regenerate.py` runs it under
`TORCH_TRACE`, as a user would run their own job; the tests import `tiny_step` to capture the
same function in-process.

    python tests/data/traces/tiny_job.py OUT_DIR [BACKEND]
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch


@torch.compiler.disable
def eager_helper(t: torch.Tensor) -> torch.Tensor:
    return t * 3


def tiny_step(x: torch.Tensor) -> torch.Tensor:
    y = torch.sin(x) + 1
    if y.sum() > 0:  # data-dependent branch: a break
        y = y * 2
    z = eager_helper(y)  # a disabled helper: a break
    return torch.cos(z) - 1


STEP_RECORD = "job::train_step"  # the user's own step annotation (record_function)
WAIT, WARMUP, ACTIVE = 1, 1, 2


def main(out_dir: Path, backend: str) -> None:
    torch.set_num_threads(1)
    compiled = torch.compile(tiny_step, backend=backend)
    x = torch.ones(8)
    compiled(x)  # compile outside the profiled steps
    schedule = torch.profiler.schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1)
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule
    ) as prof:
        for _ in range(WAIT + WARMUP + ACTIVE):
            with torch.profiler.record_function(STEP_RECORD):
                compiled(x)
            prof.step()
    prof.export_chrome_trace(str(out_dir / "profile_rank0.json"))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "inductor")
