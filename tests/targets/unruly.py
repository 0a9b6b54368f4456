"""Workloads that misbehave only when compiled: for `advisor run --isolate`.

Under Dynamo `torch.compiler.is_compiling()` is traced as True, and the call after it is not
traceable, so it breaks the graph and runs eagerly in the compiled mode's first call: the
default mode crashes or hangs there, while fullgraph=True refuses it (a graph-break finding).
"""

import os
import signal
import time

import torch


def crash(x: torch.Tensor) -> torch.Tensor:
    y = x * 2
    if torch.compiler.is_compiling():
        os.kill(os.getpid(), signal.SIGSEGV)
    return y + 1


def hang(x: torch.Tensor) -> torch.Tensor:
    y = x * 2
    if torch.compiler.is_compiling():
        time.sleep(3600)
    return y + 1


def crashes_when_compiled(device: str):
    return crash, (torch.ones(8, device=device),)


def hangs_when_compiled(device: str):
    return hang, (torch.ones(8, device=device),)
