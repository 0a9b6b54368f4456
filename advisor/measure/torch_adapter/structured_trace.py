"""Dynamo's structured trace, listened to in-process during the benchmarked compile: the
`torch.__trace` logger's records we keep, and the compilation metrics as a fallback.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

# --- the structured-trace logger (capture during the benchmarked compile) ---------------------

TRACE_LOGGER = "torch.__trace"
# One record per graph DDP's optimizer split a frame's graph into (its `name`: submod_N).
DDP_SPLIT_CHILD = "optimize_ddp_split_child"
_TRACE_EVENTS = ("dynamo_start", "compilation_metrics", "dynamo_output_graph", DDP_SPLIT_CHILD)
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


def trace_record_from(metadata: dict[str, Any], payload: object = None) -> TraceRecord | None:
    """The record kept from one structured-trace entry (its metadata dict, as the logger gets it
    and as a TORCH_TRACE file holds it as JSON), or None for an entry we do not read. The
    in-process handler and the TORCH_TRACE reader both select through here, so a file gives
    the records the in-process listener would have kept. The choice never depends on the
    payload, so a reader can decide before collecting one."""
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
            return None
        event, data = str(artifact["name"]), {}
    return TraceRecord(
        event=event,
        compile_id=_compile_id_of(metadata),
        attempt=int(metadata.get("attempt") or 0),
        data=data,
        payload=payload if isinstance(payload, str) else None,
    )


class _TraceHandler(logging.Handler):
    def __init__(self, sink: list[TraceRecord]) -> None:
        super().__init__(logging.DEBUG)
        self._sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None)
        if not isinstance(metadata, dict):
            return
        kept = trace_record_from(metadata, getattr(record, "payload", None))
        if kept is not None:
            self._sink.append(kept)


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
