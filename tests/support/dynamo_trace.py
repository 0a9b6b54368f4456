"""What Dynamo reports in-process, for the scenario and zoo tests: not part of the tool.

Breaks and compiles are read from the structured trace (logger `torch.__trace`, artifact
`dynamo_graph_break_reason` and each frame's `compilation_metrics`), which works for `.item()`
and `nonzero` too, unlike a fullgraph compile. Compiles use backend="eager": Dynamo's break
decisions do not depend on the backend, and the tests stay fast.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from advisor import Workload

_LINK = re.compile(r"compile-graph-break-site/gb/gb(\d+)\.html")
_AT = re.compile(r"Graph break in user code at (.+):(\d+)")
_FRAME = re.compile(r'File "(.+)", line (\d+), in ')
_USER_TRACEBACK = "User code traceback:"


@dataclass
class Break:
    codes: list[str]  # root first, then chained codes (e.g. GB7000)
    file: str
    line: int
    user_stack: list[tuple[str, int]]

    def innermost_in(self, path: Path) -> int | None:
        lines = [ln for f, ln in self.user_stack if Path(f).resolve() == path.resolve()]
        return lines[-1] if lines else None


@dataclass
class Capture:
    breaks: list[Break] = field(default_factory=list)
    # (frame id, frame compile id, code name, failure type) per compiled frame
    compiles: list[tuple[int, int, str | None, str | None]] = field(default_factory=list)
    outputs: list[Any] = field(default_factory=list)  # what each traced call returned

    @property
    def recompiles(self) -> int:
        return sum(1 for _, fcid, _, _ in self.compiles if fcid > 0)


def parse_break(payload: str) -> Break:
    at = _AT.search(payload)
    assert at is not None, payload[:200]
    codes: list[str] = []
    for num in _LINK.findall(payload):
        code = f"GB{num}"
        if code not in codes:
            codes.append(code)
    stack: list[tuple[str, int]] = []
    if _USER_TRACEBACK in payload:
        section = payload.split(_USER_TRACEBACK, 1)[1]
        section = section.split("Traceback (most recent call last)", 1)[0]
        stack = [(f, int(n)) for f, n in _FRAME.findall(section)]
    return Break(codes, at.group(1), int(at.group(2)), stack)


class _TraceHandler(logging.Handler):
    def __init__(self, capture: Capture) -> None:
        super().__init__(logging.DEBUG)
        self.capture = capture

    def emit(self, record: logging.LogRecord) -> None:
        md: dict[str, Any] = getattr(record, "metadata", None) or {}
        artifact = md.get("artifact")
        if isinstance(artifact, dict) and artifact.get("name") == "dynamo_graph_break_reason":
            self.capture.breaks.append(parse_break(str(getattr(record, "payload", ""))))
        metrics = md.get("compilation_metrics")
        if isinstance(metrics, dict):
            self.capture.compiles.append(
                (
                    int(md.get("frame_id", -1)),
                    int(md.get("frame_compile_id", -1)),
                    metrics.get("co_name"),
                    metrics.get("fail_type"),
                )
            )


def traced_calls(make_step: Callable[[], Callable[[], Any]], calls: int) -> Capture:
    """Call the step `make_step` builds `calls` times with the structured trace recorded, and
    collect its breaks, compiles and outputs. Dynamo is reset before and after, so the frames
    compile afresh and the next test finds no cache."""
    torch._dynamo.reset()
    result = Capture()
    handler = _TraceHandler(result)
    trace_log = logging.getLogger("torch.__trace")
    old_level = trace_log.level
    trace_log.setLevel(logging.DEBUG)
    trace_log.addHandler(handler)
    try:
        step = make_step()
        result.outputs = [step() for _ in range(calls)]
    finally:
        trace_log.removeHandler(handler)
        trace_log.setLevel(old_level)
        torch._dynamo.reset()
    return result


def compiled_eager(w: Workload) -> Callable[[], Any]:
    """One call of `w` per call, compiled with backend="eager" as the advisor compiles it: the
    workload's `compiled_module` in place (the training step around it stays eager), otherwise
    the function itself."""
    if w.compiled_module is not None:
        w.compiled_module.compile(backend="eager")
        return w
    compiled = torch.compile(w.fn, backend="eager")
    return lambda: compiled(*w.args, **w.kwargs)


@contextlib.contextmanager
def dynamo_reset_on_one_thread() -> Iterator[None]:
    """Dynamo reset around the block, and one torch thread in it: on a shared 2-core machine a
    training step with two threads ran up to 100x slower (threads waiting on each other)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch._dynamo.reset()
    try:
        yield
    finally:
        torch._dynamo.reset()
        torch.set_num_threads(threads)
