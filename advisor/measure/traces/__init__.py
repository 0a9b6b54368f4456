"""The files a user's own run leaves, read as the advisor's own records: a TORCH_TRACE folder
(`torch_trace`: per process, the structured-trace records the in-process capture keeps) and
torch.profiler Chrome/Kineto traces (`kineto`: per step, the event trees the in-process profile
makes), joined by compile id (`join`). Streamed: memory follows what is kept, not file size.
Reading the files calls no torch API; the records are built by the same functions as the
in-process ones (`trace_record_from`, `build_capture`, `profile.convert_event`).
"""

from __future__ import annotations

from advisor.measure.traces.chrome_json import ChromeTrace
from advisor.measure.traces.join import TraceJoin, join_by_compile_id, pair_by_rank
from advisor.measure.traces.kineto import KinetoProfile, ProfiledStep, read_kineto
from advisor.measure.traces.torch_trace import (
    CompileTime,
    TraceLog,
    find_logs,
    read_torch_trace,
    read_trace_log,
)

__all__ = [
    "ChromeTrace",
    "CompileTime",
    "KinetoProfile",
    "ProfiledStep",
    "TraceJoin",
    "TraceLog",
    "find_logs",
    "join_by_compile_id",
    "pair_by_rank",
    "read_kineto",
    "read_torch_trace",
    "read_trace_log",
]
