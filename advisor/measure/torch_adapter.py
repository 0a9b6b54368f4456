"""The one place that touches private or drifting torch APIs and torch's text formats.

Dynamo internals (reset, the graph-break registry, exceptions, compile ids, compilation metrics,
the structured-trace logger, config), Inductor's compile entry point, profiler event names and
the formats of Dynamo's messages change between releases. Everything here is feature-detected
so the rest of `advisor` works on the torch releases we support (2.11 to 2.13) and degrades with
a clear message where it cannot.

torch itself is imported inside the functions that need it: the analysis core (attribute,
advise, render) uses this module's name tests and parsers on recorded artifacts, without torch.
"""

from __future__ import annotations

import functools
import linecache
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from advisor.core.model import ModeError

GB_DOC_URL = "https://meta-pytorch.github.io/compile-graph-break-site/gb/{code}.html"
_GB_LINK = re.compile(r"/gb/(gb\d{4})\.html", re.IGNORECASE)


def torch_version() -> str:
    import torch

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
    except (OSError, ValueError, KeyError):  # registry file missing or unreadable
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


def describe_compile_failure(exc: BaseException) -> ModeError:
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
    return ModeError(
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
    cid = CompileContext.current_compile_id()
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
    import torch

    return torch.compile(fn, backend=backend, fullgraph=fullgraph)


def module_call_impl(module: Any) -> Callable[..., Any]:
    """What `nn.Module.compile()` compiles: the module's own call implementation."""
    return module._call_impl


def use_compiled_call(module: Any, compiled: Callable[..., Any] | None) -> None:
    """Point a module's calls at a compiled call implementation (None: back to eager), as
    `nn.Module.compile()` does; each mode keeps its own compiled version."""
    module._compiled_call_impl = compiled


def break_probe_functions() -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """The probe: two tiny graphs split by one explicit break, and the same ops unbroken. Timed
    against each other unprofiled, they price one break; profiled beside the workload, the
    first prices one more graph call and one break's glue (reconstruction, the resume call)."""
    import torch._dynamo

    def advisor_break_probe(x: Any) -> Any:
        y = x * 2.0 + 1.0
        torch._dynamo.graph_break()
        return y * 3.0

    def advisor_unbroken_probe(x: Any) -> Any:
        y = x * 2.0 + 1.0
        return y * 3.0

    return advisor_break_probe, advisor_unbroken_probe


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


_SIZE_GUARD = re.compile(r"size mismatch at index (\d+)")


def recompile_cause(reason: str) -> tuple[str, int | None]:
    """The failing guard's kind, read from its text, and for a size guard the dimension that
    changed: "size" | "dtype" | "rank" | "requires_grad" | "device" | "value" | "other"."""
    size = _SIZE_GUARD.search(reason)
    if size:
        return "size", int(size.group(1))
    for needle, cause in (
        ("dtype mismatch", "dtype"),
        ("rank mismatch", "rank"),
        ("dim mismatch", "rank"),
        ("requires_grad", "requires_grad"),
        ("device", "device"),
    ):
        if needle in reason:
            return cause, None
    if "==" in reason or "!=" in reason:
        return "value", None
    return "other", None


# --- memory -----------------------------------------------------------------------------------

CPU_MEMORY_METHOD = "cpu_profiler"  # peak live bytes over one call, from profiler memory events
CUDA_MEMORY_METHOD = "cuda_allocator"  # torch.cuda.max_memory_allocated over one call


def cpu_peak_call_bytes(call: Callable[[], Any]) -> int:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        call()
    deltas: list[tuple[float, int]] = []
    for event in prof.events():
        delta = getattr(event, "self_cpu_memory_usage", 0) or 0
        if event.name == MEMORY_EVENT:
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
    import torch

    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    call()
    torch.cuda.synchronize(device)
    return int(torch.cuda.max_memory_allocated(device))


# --- the structured-trace logger (capture during the benchmarked compile) ---------------------

TRACE_LOGGER = "torch.__trace"
_TRACE_EVENTS = ("dynamo_start", "compilation_metrics", "dynamo_output_graph")
_TRACE_ARTIFACTS = ("dynamo_graph_break_reason", "recompile_reasons")
_METRIC_KEYS = (
    "co_name",
    "co_filename",
    "co_firstlineno",
    "graph_op_count",
    "graph_node_count",
    "entire_frame_compile_time_s",
    "backend_compile_time_s",
    "fail_type",
    "fail_reason",
    "fail_user_frame_filename",
    "fail_user_frame_lineno",
    "recompile_reason",
    "has_guarded_code",
)


@dataclass(frozen=True)
class TraceRecord:
    """One structured-trace record we keep: its event, compile id, and the parts we read."""

    event: str  # dynamo_start | compilation_metrics | dynamo_output_graph | artifact name
    compile_id: str | None
    attempt: int
    data: dict[str, Any]
    payload: str | None


def _compile_id_of(metadata: dict[str, Any]) -> str | None:
    frame_id = metadata.get("frame_id")
    frame_compile_id = metadata.get("frame_compile_id")
    if frame_id is None or frame_compile_id is None:
        return None
    prefix = ""
    if metadata.get("compiled_autograd_id") is not None:
        prefix = f"!{metadata['compiled_autograd_id']}/"
    return f"{prefix}{frame_id}/{frame_compile_id}"


class _TraceHandler(logging.Handler):
    def __init__(self, sink: list[TraceRecord]) -> None:
        super().__init__(logging.DEBUG)
        self._sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None)
        if not isinstance(metadata, dict):
            return
        event = next((k for k in _TRACE_EVENTS if k in metadata), None)
        data: dict[str, Any]
        if event is not None:
            body = metadata.get(event)
            data = dict(body) if isinstance(body, dict) else {}
            if event == "compilation_metrics":
                data = {k: data.get(k) for k in _METRIC_KEYS}
        else:
            artifact = metadata.get("artifact")
            if not isinstance(artifact, dict) or artifact.get("name") not in _TRACE_ARTIFACTS:
                return
            event, data = str(artifact["name"]), {}
        payload = getattr(record, "payload", None)
        self._sink.append(
            TraceRecord(
                event=event,
                compile_id=_compile_id_of(metadata),
                attempt=int(metadata.get("attempt") or 0),
                data=data,
                payload=payload if isinstance(payload, str) else None,
            )
        )


class StructuredTraceListener:
    """Collects Dynamo's structured-trace records in-process while active (a context manager).

    `trace_structured` emits whenever the `torch.__trace` logger has a handler, so no env var
    is needed; the handler and the logger level are removed/restored on exit.
    """

    def __init__(self) -> None:
        self.records: list[TraceRecord] = []
        self._handler = _TraceHandler(self.records)
        self._logger = logging.getLogger(TRACE_LOGGER)
        self._old_level: int | None = None

    def __enter__(self) -> StructuredTraceListener:
        self._old_level = self._logger.level
        self._logger.setLevel(logging.DEBUG)
        self._logger.addHandler(self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        self._logger.removeHandler(self._handler)
        if self._old_level is not None:
            self._logger.setLevel(self._old_level)


def compilation_metrics_records() -> list[TraceRecord]:
    """The same per-compile-id metrics from `get_compilation_metrics()` (no breaks, no lines);
    a fallback for releases whose trace logger emits nothing."""
    try:
        from torch._dynamo.utils import get_compilation_metrics
    except ImportError:
        return []
    out: list[TraceRecord] = []
    for metrics in get_compilation_metrics():
        cid = getattr(metrics, "compile_id", None)
        data = {k: getattr(metrics, k, None) for k in _METRIC_KEYS}
        out.append(TraceRecord("compilation_metrics", str(cid) if cid else None, 0, data, None))
    return out


# --- profiler event names ---------------------------------------------------------------------

REGION_PREFIX = "Torch-Compiled Region: "
LOOKUP_EVENT = "TorchDynamo Cache Lookup"
# The events that wrap the call of a compiled graph inside a region: Inductor's
# `## Call CompiledFxGraph <key> ##` and AOTAutograd's `CompiledFunction` (grad enabled).
GRAPH_CALL_PREFIXES = ("## Call CompiledFxGraph", "CompiledFunction")
ATEN_PREFIX = "aten::"
MEMORY_EVENT = "[memory]"


# aten ops that Inductor does not fuse but calls as the same library kernel (extern kernels:
# BLAS, convolution, attention, recurrent layers, linear algebra): compiled, they take about the
# time they take in eager, so moving them into a graph saves their dispatch, not their time.
# Everything else (pointwise, reductions, views) is generated code that fuses with its
# neighbours. Names are the profiler's `aten::<op>` events, top-level ops only.
_COMPUTE_BOUND_OPS = frozenset(
    {
        "mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "linear", "mv", "addmv", "dot",
        "vdot", "einsum", "tensordot", "_addmm_activation", "_int_mm", "convolution",
        "_convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
        "conv_transpose3d", "scaled_dot_product_attention", "lstm", "gru", "rnn_tanh",
        "rnn_relu", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "embedding_bag",
        "_embedding_bag", "cholesky", "cholesky_solve", "triangular_solve", "lu_solve",
    }
)  # fmt: skip
_COMPUTE_BOUND_PREFIXES = (
    "_scaled_dot_product", "_flash_attention", "_efficient_attention", "cudnn_", "miopen_",
    "mkldnn_", "_cudnn_", "_mkldnn_", "linalg_", "_linalg_", "fft_", "_fft_", "_weight_int",
)  # fmt: skip


def keeps_time_compiled(event_name: str) -> bool:
    """Whether an aten op event runs as the same (non-fused) kernel under Inductor."""
    if not event_name.startswith("aten::"):
        return False
    op = event_name[len("aten::") :].split(".", 1)[0]
    return op in _COMPUTE_BOUND_OPS or op.startswith(_COMPUTE_BOUND_PREFIXES)


def region_compile_id(event_name: str) -> str | None:
    if event_name.startswith(REGION_PREFIX):
        return event_name[len(REGION_PREFIX) :].strip()
    return None


def is_graph_call_event(event_name: str) -> bool:
    return event_name.startswith(GRAPH_CALL_PREFIXES)


def is_aten_op(event_name: str) -> bool:
    return event_name.startswith(ATEN_PREFIX)


def is_structural_event(name: str) -> bool:
    """Record-function style events (Dynamo regions, cache lookups, graph calls, wrapper
    prologues, a call's own record) as opposed to aten ops; they cost more to profile."""
    return not is_aten_op(name) and name != MEMORY_EVENT


@dataclass(frozen=True)
class EventKind:
    """What a profiler event's name says it is (see `advisor.core.artifacts.EVENT_KINDS`)."""

    kind: str
    compile_id: str | None = None
    keeps_time: bool = False


def classify_event(name: str) -> EventKind:
    """The kind of a profiler event from its name (the advisor's own records aside)."""
    compile_id = region_compile_id(name)
    if compile_id is not None:
        return EventKind("region", compile_id)
    if name == LOOKUP_EVENT:
        return EventKind("lookup")
    if is_graph_call_event(name):
        return EventKind("graph_call")
    if is_aten_op(name):
        return EventKind("aten", keeps_time=keeps_time_compiled(name))
    if name == MEMORY_EVENT:
        return EventKind("memory")
    return EventKind("other")


def profiler_activities(device: str) -> list[Any]:
    import torch
    from torch.profiler import ProfilerActivity

    activities = [ProfilerActivity.CPU]
    if device.startswith("cuda") and torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    return activities


def event_device_us(event: Any) -> float:
    """Device (kernel) time under a profiler event, 0 where the build records none."""
    for name in ("device_time_total", "cuda_time_total"):
        value = getattr(event, name, None)
        if isinstance(value, (int, float)):
            return float(value)
    return 0.0


def event_children(event: Any) -> list[Any]:
    return list(getattr(event, "cpu_children", []) or [])


def event_interval_us(event: Any) -> tuple[float, float]:
    time_range = event.time_range
    return float(time_range.start), float(time_range.end)


def function_events(prof: Any) -> list[Any]:
    """The profiler's function events (with parent/child links) after a session."""
    return list(prof.profiler.function_events) if prof.profiler is not None else []


def synchronize(device: str) -> None:
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        torch.cuda.synchronize(device)


# --- the `dynamo_graph_break_reason` artifact -------------------------------------------------

_BREAK_AT = re.compile(r"^Graph break in user code at (?P<file>.+):(?P<line>\d+)\s*$")
_TB_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<name>.+)$')
_CHAINED = "*** While handling this graph break, another graph break occurred: ***"
_REASON_PREFIX = "Graph Break Reason:"


@dataclass(frozen=True)
class BreakPart:
    """One break message of a (possibly chained) break: registry code, gb_type, text."""

    gb_code: str | None
    gb_type: str
    explanation: str
    hints: tuple[str, ...]


@dataclass(frozen=True)
class UserFrame:
    file: str
    line: int
    function: str
    code: str


@dataclass(frozen=True)
class ParsedBreak:
    file: str
    line: int
    parts: tuple[BreakPart, ...]  # root cause first; e.g. (GB0059, GB7000) for a loop skip
    frames: tuple[UserFrame, ...]  # user traceback, outer to inner


def _parse_part(chunk: str) -> BreakPart | None:
    lines = chunk.splitlines()
    idx = next((i for i, ln in enumerate(lines) if ln.strip().startswith("Explanation:")), None)
    gb_type = ""
    if idx is not None:
        before = [ln.strip() for ln in lines[:idx] if ln.strip()]
        gb_type = before[-1] if before else ""
    else:
        first = [ln.strip() for ln in lines if ln.strip()]
        gb_type = first[0] if first else ""
    if gb_type.startswith(_REASON_PREFIX):
        gb_type = gb_type[len(_REASON_PREFIX) :].strip()
    if not gb_type:
        return None
    explanation: list[str] = []
    hints: list[str] = []
    mode = ""
    for raw in lines[(idx or 0) :]:
        text = raw.strip()
        if text.startswith("Explanation:"):
            mode = "e"
            explanation.append(text.split(":", 1)[1].strip())
        elif text.startswith("Hint:"):
            mode = "h"
            hints.append(text.split(":", 1)[1].strip())
        elif text.startswith(("Developer debug context:", "For more details")) or not text:
            mode = ""
        elif mode == "e":
            explanation.append(text)
        elif mode == "h":
            hints[-1] = f"{hints[-1]} {text}"
    return BreakPart(
        gb_code=gb_code_for(gb_type, chunk),
        gb_type=gb_type,
        explanation=" ".join(explanation),
        hints=tuple(hints),
    )


def parse_break_artifact(payload: str) -> ParsedBreak | None:
    """Parse Dynamo's `dynamo_graph_break_reason` text (the `graph_breaks` log message):

    Graph break in user code at FILE:LINE
    Graph Break Reason: [prefix:]  <gb_type> / Explanation / Hint... / doc link
    [*** While handling this graph break, another graph break occurred: *** <gb_type>...]
    User code traceback:
      File "...", line N, in fn
        source
    """
    text = payload or ""
    lines = text.splitlines()
    if not lines:
        return None
    head = _BREAK_AT.match(lines[0].strip())
    if head is None:
        return None
    body = "\n".join(lines[1:])
    reason, _, rest = body.partition("User code traceback:")
    tb_text = rest.split("\nTraceback (most recent call last)", 1)[0]
    parts = [p for p in (_parse_part(c) for c in reason.split(_CHAINED)) if p is not None]
    frames: list[UserFrame] = []
    tb_lines = tb_text.splitlines()
    for i, raw in enumerate(tb_lines):
        match = _TB_FRAME.match(raw)
        if match is None:
            continue
        code = ""
        if i + 1 < len(tb_lines) and not _TB_FRAME.match(tb_lines[i + 1]):
            code = tb_lines[i + 1].strip()
        file, line = match.group("file"), int(match.group("line"))
        frames.append(
            UserFrame(file, line, match.group("name").strip(), code or source_line(file, line))
        )
    return ParsedBreak(head.group("file"), int(head.group("line")), tuple(parts), tuple(frames))


@functools.cache
def _library_roots() -> tuple[str, ...]:
    import os
    import sysconfig

    import torch

    roots = {os.path.dirname(torch.__file__)}
    for key in ("stdlib", "platstdlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(path)
    return tuple(sorted(roots))


def is_library_file(filename: str) -> bool:
    """torch itself or the Python standard library (not the user's code)."""
    return filename.startswith(_library_roots()) or filename.startswith("<")


def resume_origin(co_name: str) -> tuple[str, int] | None:
    """`torch_dynamo_resume_in_<fn>_at_<line>` -> (fn, line)."""
    match = re.match(r"^torch_dynamo_resume_in_(?P<fn>.+)_at_(?P<line>\d+)$", co_name)
    return (match.group("fn"), int(match.group("line"))) if match else None


# --- Dynamo config ------------------------------------------------------------------------


def dynamo_config_patch(setting: str, value: Any) -> Any:
    """A context manager that sets one `torch._dynamo.config` value; raises if it is unknown."""
    import torch._dynamo.config as dynamo_config

    if not hasattr(dynamo_config, setting):
        raise AttributeError(f"torch._dynamo.config has no '{setting}' in torch {torch_version()}")
    return dynamo_config.patch(**{setting: value})


def guard_skipping_stances() -> tuple[Any, Any] | None:
    """Two context makers, (default stance, stance that skips guard evaluation), to time the
    same warm compiled code with and without its guards; None where this torch lacks
    `torch.compiler.set_stance(..., skip_guard_eval_unsafe=...)`. Both go through set_stance
    so the two sides pay the same context-manager overhead."""
    import inspect

    import torch

    set_stance = getattr(torch.compiler, "set_stance", None)
    if set_stance is None:
        return None
    try:
        if "skip_guard_eval_unsafe" not in inspect.signature(set_stance).parameters:
            return None
    except (TypeError, ValueError):
        return None
    return (
        lambda: set_stance("default"),
        lambda: set_stance("default", skip_guard_eval_unsafe=True),
    )


def dynamo_config_snapshot() -> dict[str, Any]:
    """Every Dynamo config value, to check that a run leaves them as it found them."""
    import torch._dynamo.config as dynamo_config

    return dict(dynamo_config.get_config_copy())


def _config_modules() -> dict[str, Any]:
    import torch._dynamo.config as dynamo_config
    import torch._inductor.config as inductor_config

    return {"dynamo": dynamo_config, "inductor": inductor_config}


def compile_config_state() -> dict[str, dict[str, Any]]:
    """Every Dynamo and Inductor config value (deep copies), to restore after a run."""
    return {name: dict(module.get_config_copy()) for name, module in _config_modules().items()}


def restore_compile_config(state: dict[str, dict[str, Any]]) -> list[str]:
    """Set back every config value that differs from `state`; returns the names it reset.
    Only changed values are written, so untouched settings keep their defaults' provenance."""
    restored = []
    for name, module in _config_modules().items():
        now = module.get_config_copy()
        for key, value in state.get(name, {}).items():
            if key in now and now[key] != value:
                setattr(module, key, value)
                restored.append(f"{name}.{key}")
    return restored


def profiler_active() -> bool:
    """Whether a torch (autograd) profiler is recording in this process."""
    import torch

    return bool(torch.autograd._profiler_enabled())


# --- Dynamo's text formats --------------------------------------------------------------------

_GRAPH_SOURCE = "# File: "  # the source comments in a printed FX graph


def graph_source_lines(graph_text: str, file: str) -> tuple[int, ...]:
    """Source lines a graph covers, from the `# File: path:line in fn, code:` comments of its
    printout (lines in `file` when there are any, else every line mentioned)."""
    mine: set[int] = set()
    anywhere: set[int] = set()
    for raw in graph_text.splitlines():
        line = raw.strip()
        if not line.startswith(_GRAPH_SOURCE):
            continue
        where = line[len(_GRAPH_SOURCE) :].split(" in ", 1)[0]
        path, _, number = where.rpartition(":")
        if not number.isdigit():
            continue
        anywhere.add(int(number))
        if path == file:
            mine.add(int(number))
    return tuple(sorted(mine or anywhere))


def one_line_guard_reason(reason: str) -> str:
    """A guard-failure reason as one line: Dynamo appends the user stack trace on later lines
    and pads the guard's source comment with spaces."""
    head = reason.split("\nUser stack trace:", 1)[0]
    return re.sub(r"\s+", " ", head).strip()


def is_recompile_id(compile_id: str) -> bool:
    """`frame/recompile` ids with a recompile count above zero (`0/1`, `3/2`)."""
    tail = compile_id.rsplit("/", 1)[-1]
    return tail.isdigit() and int(tail) > 0


# --- outputs and logs -------------------------------------------------------------------------


def tree_leaves_and_spec(value: Any) -> tuple[list[Any], Any]:
    """Flatten nested containers of tensors (torch's pytree, which knows ModelOutput-style
    registered classes)."""
    from torch.utils._pytree import tree_flatten

    return tree_flatten(value)


DYNAMO_LOGGER = "torch._dynamo"
# Kineto's native log lines on stderr, e.g. `USDT:2026-11-30 ... profiler_start.cpp:12] ...`.
PROFILER_NATIVE_LOG = re.compile(r"^(USDT|INFO|WARNING):\d{4}-\d\d-\d\d .*\.cpp:\d+\]")
