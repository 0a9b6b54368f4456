"""Test helpers that compile a function and capture it: not part of the tool.

`marked_backend` wraps a Dynamo backend so each compiled graph's call is a profiler event named
like Inductor's own graph-call marker: `eager` and `aot_eager` emit nothing that separates the
graph from the eager work around it, and the attribution recognises only torch's markers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from advisor.core.artifacts import Capture
from advisor.measure import torch_adapter as ta
from advisor.measure.capture import CaptureSession

GRAPH_MARKER = "## Call CompiledFxGraph advisor-test {cid} ##"


def marked_backend(backend: Any) -> Any:
    from torch._dynamo.backends.registry import lookup_backend

    inner = lookup_backend(backend) if isinstance(backend, str) else backend

    def advisor_marked(gm: Any, example_inputs: Any) -> Any:
        compiled = inner(gm, example_inputs)
        name = GRAPH_MARKER.format(cid=ta.current_compile_id())

        def call(*args: Any) -> Any:
            with torch.profiler.record_function(name):
                return compiled(*args)

        return call

    advisor_marked.__name__ = f"advisor_marked_{getattr(inner, '__name__', 'backend')}"
    return advisor_marked


def compile_and_capture(
    fn: Callable[..., Any],
    args: tuple[Any, ...] | list[Any],
    kwargs: Mapping[str, Any] | None = None,
    backend: Any = "eager",
    *,
    mark_graphs: bool = False,
    extra_calls: tuple[tuple[Any, ...], ...] = (),
) -> tuple[Callable[..., Any], Capture]:
    """Reset Dynamo, compile `fn` (fullgraph=False) with `backend`, run it once (and once per
    entry of `extra_calls`, e.g. to force recompiles) inside a CaptureSession; return the warm
    compiled function and the capture."""
    ta.reset_dynamo()
    chosen = marked_backend(backend) if mark_graphs else backend
    compiled = ta.compile_mode(fn, chosen, fullgraph=False)
    with CaptureSession() as session:
        for call_args in extra_calls:
            compiled(*call_args, **dict(kwargs or {}))
        compiled(*args, **dict(kwargs or {}))
    return compiled, session.result()


def capture_workload(
    fn: Callable[..., Any],
    args: tuple[Any, ...] | list[Any],
    kwargs: Mapping[str, Any] | None = None,
    backend: Any = "eager",
    *,
    extra_calls: tuple[tuple[Any, ...], ...] = (),
) -> Capture:
    return compile_and_capture(fn, args, kwargs, backend, extra_calls=extra_calls)[1]
