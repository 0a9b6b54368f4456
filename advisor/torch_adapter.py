"""The one place that touches private or drifting torch APIs.

Dynamo internals (reset, the graph-break registry, exceptions, compile ids, compilation metrics,
the structured-trace logger), Inductor's compile entry point and profiler event names change
between releases. Everything here is feature-detected so the rest of `advisor` works on the
torch releases we support (2.11 to 2.13) and degrades with a clear message where it cannot.
"""

from __future__ import annotations

import functools
import linecache
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

GB_DOC_URL = "https://meta-pytorch.github.io/compile-graph-break-site/gb/{code}.html"
_GB_LINK = re.compile(r"/gb/(gb\d{4})\.html", re.IGNORECASE)


def torch_version() -> str:
    return str(torch.__version__)


def reset_dynamo() -> None:
    """Drop every Dynamo cache entry and counter, so the next compile starts clean."""
    import torch._dynamo

    torch._dynamo.reset()


# --- the graph-break registry ----------------------------------------------------------------


@functools.cache
def gb_type_to_code() -> dict[str, str]:
    """gb_type (first line of a break message) -> registry id such as 'GB0059'."""
    try:
        from torch._dynamo.exc import _load_gb_type_to_gb_id_map
    except ImportError:
        return {}
    try:
        return dict(_load_gb_type_to_gb_id_map())
    except Exception:  # registry file missing or unreadable in this build
        return {}


@functools.cache
def gb_registry() -> dict[str, list[dict[str, Any]]]:
    """The registry JSON: id -> list of variants {Gb_type, Context, Explanation, Hints}."""
    import json
    from pathlib import Path

    import torch._dynamo

    path = Path(torch._dynamo.__file__).parent / "graph_break_registry.json"
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}


def gb_code_for(gb_type: str | None, message: str = "") -> str | None:
    """Registry id for a break: from its gb_type, else from a documentation link in the message."""
    if gb_type:
        code = gb_type_to_code().get(gb_type)
        if code:
            return code
    match = _GB_LINK.search(message or "")
    return match.group(1).upper() if match else None


def gb_doc_url(code: str | None) -> str | None:
    return GB_DOC_URL.format(code=code.lower()) if code else None


@dataclass(frozen=True)
class BreakMessage:
    """A break message split into its parts (the format of `format_graph_break_message`)."""

    gb_type: str
    explanation: str
    hints: tuple[str, ...]


def parse_break_message(message: str) -> BreakMessage:
    lines = (message or "").splitlines()
    gb_type = lines[0].strip() if lines else ""
    explanation_parts: list[str] = []
    hints: list[str] = []
    for raw in lines[1:]:
        line = raw.strip()
        if line.startswith("Explanation:"):
            explanation_parts.append(line.split(":", 1)[1].strip())
        elif line.startswith("Hint:"):
            hints.append(line.split(":", 1)[1].strip())
    return BreakMessage(gb_type, " ".join(explanation_parts), tuple(hints))


def source_line(filename: str, lineno: int | None) -> str:
    if not filename or not lineno:
        return ""
    return linecache.getline(filename, lineno).strip()


# --- failures of a compiled mode -------------------------------------------------------------


@dataclass(frozen=True)
class FailureInfo:
    type: str
    message: str
    gb_code: str | None = None
    gb_type: str | None = None
    file: str | None = None
    line: int | None = None
    code: str | None = None


def describe_compile_failure(exc: BaseException) -> FailureInfo:
    """What a failed compile says: for Dynamo's Unsupported, the first break and where it is."""
    message = str(exc)
    gb_type = getattr(exc, "gb_type", None)
    parsed = parse_break_message(message)
    if not gb_type and parsed.gb_type and gb_code_for(parsed.gb_type):
        gb_type = parsed.gb_type
    file = line = code = None
    frame = getattr(exc, "innermost_user_frame_summary", None)
    stack = getattr(exc, "real_stack", None)
    if frame is None and stack:
        frame = stack[-1]
    if frame is not None:
        file, line = frame.filename, frame.lineno
        code = (frame.line or "").strip() or source_line(file, line)
    first = message.strip().splitlines()[0] if message.strip() else type(exc).__name__
    return FailureInfo(
        type=type(exc).__name__,
        message=first,
        gb_code=gb_code_for(gb_type, message),
        gb_type=gb_type,
        file=file,
        line=line,
        code=code,
    )


# --- backends ---------------------------------------------------------------------------------


def current_compile_id() -> str | None:
    try:
        from torch._guards import CompileContext
    except ImportError:
        return None
    try:
        cid = CompileContext.current_compile_id()
    except Exception:
        return None
    return str(cid) if cid is not None else None


class InductorBackend:
    """A backend that compiles with Inductor and records which compile ids it served.

    Each mode gets its own instance: Dynamo guards cache entries on the backend's identity
    (BACKEND_MATCH), so one mode's compiled code is never reused by another mode even though
    they trace the same code objects, and all modes can stay warm for interleaved timing.
    """

    def __init__(self, label: str, on_graph: Callable[[str | None, Any], None] | None = None):
        self.label = label
        self.compile_ids: list[str] = []
        self._on_graph = on_graph
        self.__name__ = f"advisor_inductor_{label}"

    def __call__(self, gm: Any, example_inputs: Any) -> Any:
        from torch._inductor.compile_fx import compile_fx

        cid = current_compile_id()
        if cid is not None:
            self.compile_ids.append(cid)
        if self._on_graph is not None:
            self._on_graph(cid, gm)
        return compile_fx(gm, example_inputs)


def compile_mode(fn: Callable[..., Any], backend: Any, fullgraph: bool) -> Callable[..., Any]:
    return torch.compile(fn, backend=backend, fullgraph=fullgraph)


def recompile_reasons() -> dict[str, str]:
    """compile id -> reason for every recompile Dynamo recorded (most recent 64 compiles)."""
    try:
        from torch._dynamo.utils import get_compilation_metrics
    except ImportError:
        return {}
    reasons: dict[str, str] = {}
    for metrics in get_compilation_metrics():
        reason = getattr(metrics, "recompile_reason", None)
        cid = getattr(metrics, "compile_id", None)
        if reason and cid is not None:
            reasons[str(cid)] = str(reason)
    return reasons


def is_backend_switch(reason: str) -> bool:
    """A 'recompile' caused only by another mode's backend owning the cached entry."""
    return "BACKEND_MATCH" in reason


# --- memory -----------------------------------------------------------------------------------

CPU_MEMORY_METHOD = (
    "CPU: peak of live bytes allocated during one warm call, from torch.profiler memory events "
    "(each op's net allocation placed at its start; memory held before the call excluded)"
)
CUDA_MEMORY_METHOD = "CUDA: torch.cuda.max_memory_allocated over one warm call (absolute peak)"


def cpu_peak_call_bytes(call: Callable[[], Any]) -> int:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        call()
    deltas: list[tuple[float, int]] = []
    for event in prof.events():
        delta = getattr(event, "self_cpu_memory_usage", 0) or 0
        if event.name == "[memory]":
            delta = getattr(event, "cpu_memory_usage", 0) or 0
        if delta:
            deltas.append((event.time_range.start, int(delta)))
    deltas.sort(key=lambda item: item[0])
    live = peak = 0
    for _, delta in deltas:
        live += delta
        peak = max(peak, live)
    return peak


def cuda_peak_call_bytes(call: Callable[[], Any], device: str) -> int:
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    call()
    torch.cuda.synchronize(device)
    return int(torch.cuda.max_memory_allocated(device))
