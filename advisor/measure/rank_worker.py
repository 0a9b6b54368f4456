"""One data-parallel rank: `python -m advisor.measure.rank_worker TASK RESULT`.

Started by `advisor.measure.ranks` with RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT set. It joins the process group (gloo on CPU, nccl on CUDA, one GPU per local
rank), builds the target (its factory wraps the model in DistributedDataParallel: the group is
there when it runs), measures it as the in-process run does with every count fixed
(`advisor.measure.lockstep`), writes its `Measurements` as a `RankResult`, and leaves the
group. Bad input is a result with `error` (one line) and exit status 3, so the parent stops the
other ranks; anything else ends the process, and the parent reports how. faulthandler writes
the Python stack to stderr on a fatal signal.
"""

from __future__ import annotations

import faulthandler
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from advisor.core.errors import AdvisorError
from advisor.core.files import replace_atomically
from advisor.core.serial import message_from_json, message_to_json
from advisor.measure import torch_adapter
from advisor.measure.lockstep import lockstep_settings
from advisor.measure.pipeline import Progress, RunOptions, measure_workload
from advisor.measure.quiet import muted_dynamo_warnings
from advisor.measure.ranks import ERROR_EXIT, RankResult, RankTask
from advisor.measure.workload import load_target


@dataclass(frozen=True)
class Rank:
    rank: int
    local_rank: int
    world_size: int


def main(argv: Sequence[str] | None = None) -> int:
    request, result = (Path(a) for a in (sys.argv[1:] if argv is None else argv))
    faulthandler.enable(all_threads=False)
    task = message_from_json(RankTask, request.read_text(encoding="utf-8"))
    rank = rank_from_environment()
    try:
        with muted_dynamo_warnings():
            outcome = measure_rank(task, rank)
    except AdvisorError as exc:
        outcome = RankResult(rank.rank, error=str(exc))
    # the parent sees a whole result or none; compact: a rank's measurements are large
    replace_atomically(result, message_to_json(outcome, compact=True))
    return ERROR_EXIT if outcome.error else 0


def rank_from_environment() -> Rank:
    try:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    except (KeyError, ValueError) as exc:
        raise SystemExit(f"advisor rank worker: RANK and WORLD_SIZE must be set ({exc})") from None
    return Rank(rank, int(os.environ.get("LOCAL_RANK", rank)), world)


def rank_device(device: str, local_rank: int) -> str:
    """Each rank's device: the CPU, or its own GPU (one per local rank)."""
    return f"cuda:{local_rank}" if device.startswith("cuda") else device


def measure_rank(task: RankTask, rank: Rank) -> RankResult:
    device = rank_device(task.device, rank.local_rank)
    if device.startswith("cuda"):
        torch_adapter.set_cuda_device(device)
    backend = "nccl" if device.startswith("cuda") else "gloo"
    torch_adapter.init_process_group(backend, rank=rank.rank, world_size=rank.world_size)
    try:
        params = json.loads(task.params_json)
        workload = load_target(task.target, device, params)
        options = RunOptions(
            task.target,
            device,
            lockstep_settings(task.settings),
            task.modes,
            params=tuple(params.items()),
        )
        measurements = measure_workload(workload, options, device, _progress(rank.rank))
    finally:
        torch_adapter.destroy_process_group()
    return RankResult(rank.rank, measurements)


def _progress(rank: int) -> Progress:
    def progress(message: str) -> None:
        print(f"advisor: rank {rank}: {message}", file=sys.stderr, flush=True)

    return progress


if __name__ == "__main__":
    sys.exit(main())
