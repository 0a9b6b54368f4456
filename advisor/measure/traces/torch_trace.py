"""TORCH_TRACE folders: the structured-trace logs a user's own run leaves
(`TORCH_TRACE=DIR python job.py`), read as the records the in-process listener keeps.

Each process writes `DIR/dedicated_log_torch_trace_[rank_<N>_]<random>.log`. A record is a
glog-style prefix line whose JSON is the metadata dict the `torch.__trace` logger receives
(`V1207 17:30:52.604000 <pid> torch/_dynamo/utils.py:2350] {json}`), followed, when the JSON
has `has_payload`, by the payload's lines, each prefixed by a tab. Files are streamed line by
line: a compile's log runs to megabytes (chromium events, generated code), of which the
capture needs a few records; payloads of records we do not keep are never collected.

The records are selected by `trace_record_from`, the function the in-process handler calls, so
`advisor.measure.capture.build_capture(log.records)` gives the capture that listening to the
same compile in-process gives.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from advisor.core.errors import AdvisorError, one_line
from advisor.measure.torch_adapter import TraceRecord
from advisor.measure.torch_adapter.structured_trace import trace_record_from

LOG_GLOB = "dedicated_log_torch_trace_*.log"
_RANK_IN_NAME = re.compile(r"dedicated_log_torch_trace_rank_(\d+)_")
# glog prefix: level letter, MMDD, time, pid, file:line], then optional [..] tags, then JSON.
_PREFIX = re.compile(
    r"^(?:\[rank\d+\]:)?[VIWEC]\d{4} [\d:.]+ +(\d+) [^\]]*\](?: \[[^\]]*\])* (?={)"
)
_TORCH_VERSION_ARTIFACT = "torch_version"


@dataclass(frozen=True)
class CompileTime:
    """A compile id's times from its `compilation_metrics` record (None: not recorded)."""

    compile_id: str
    entire_frame_s: float | None
    backend_s: float | None


@dataclass(frozen=True)
class TraceLog:
    """One process's TORCH_TRACE log: the records the in-process listener would have kept."""

    path: str
    rank: int | None  # from the file name under torchrun, else the records' `rank` field
    records: tuple[TraceRecord, ...]
    compile_times: tuple[CompileTime, ...] = ()
    torch_version: str | None = None  # the `torch_version` artifact, when the log has one
    pid: int | None = None
    lines: int = 0  # lines read
    truncated: bool = False  # the last record was cut off (the process died mid-write)

    def compile_time(self, compile_id: str) -> CompileTime | None:
        return next((t for t in self.compile_times if t.compile_id == compile_id), None)


def find_logs(trace_dir: str | Path) -> list[Path]:
    """The structured-trace logs in a TORCH_TRACE folder (or the one file given), by name."""
    path = Path(trace_dir)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise AdvisorError(f"no such TORCH_TRACE folder: {one_line(str(path))}")
    logs = sorted(p for p in path.glob(LOG_GLOB) if p.is_file())
    if not logs:
        raise AdvisorError(
            f"no TORCH_TRACE log ({LOG_GLOB}) in {one_line(str(path))}: "
            "run the job with TORCH_TRACE set to this folder"
        )
    return logs


def read_torch_trace(trace_dir: str | Path) -> tuple[TraceLog, ...]:
    """Every process's log in a TORCH_TRACE folder, ordered by rank (unknown ranks last)."""
    logs = [read_trace_log(p) for p in find_logs(trace_dir)]
    logs.sort(key=lambda log: (log.rank is None, log.rank or 0, log.path))
    return tuple(logs)


@dataclass
class _Entry:
    """One record being read: its metadata and, while its payload lines follow, those lines."""

    metadata: dict[str, Any]
    kept: TraceRecord | None
    payload: list[str] | None  # collected only for a record that is kept or read here


class _LogState:
    """What reading one log has gathered so far."""

    def __init__(self) -> None:
        self.records: list[TraceRecord] = []
        self.times: list[CompileTime] = []
        self.rank: int | None = None
        self.pid: int | None = None
        self.torch_version: str | None = None

    def finish(self, entry: _Entry) -> None:
        payload = "\n".join(entry.payload) if entry.payload is not None else None
        if self.rank is None and isinstance(entry.metadata.get("rank"), int):
            self.rank = int(entry.metadata["rank"])
        if _artifact_name(entry.metadata) == _TORCH_VERSION_ARTIFACT and payload:
            self.torch_version = _torch_version(payload)
        kept = entry.kept
        if kept is None:
            return
        if payload is not None:
            kept = replace(kept, payload=payload)
        self.records.append(kept)
        if kept.event == "compilation_metrics" and kept.compile_id is not None:
            self.times.append(
                CompileTime(
                    kept.compile_id,
                    _seconds(kept.data.get("entire_frame_compile_time_s")),
                    _seconds(kept.data.get("backend_compile_time_s")),
                )
            )


def read_trace_log(path: str | Path) -> TraceLog:
    """One structured-trace log, streamed line by line."""
    path = Path(path)
    state = _LogState()
    entry: _Entry | None = None
    line_no = 0
    truncated = False
    with _open_text(path) as lines:
        for line_no, line in enumerate(lines, start=1):
            # a log written whole ends with a newline; one cut mid-line was cut mid-write
            truncated = not line.endswith("\n")
            if line.startswith("\t"):
                if entry is None:
                    raise _bad_line(path, line_no, "a payload line before any record")
                if entry.payload is not None:
                    entry.payload.append(line[1:].rstrip("\n"))
                continue
            if entry is not None:
                state.finish(entry)
                entry = None
            if not line.strip():
                continue
            parsed = _parse_record_line(path, line_no, line)
            if parsed is None:  # the last line cut off mid-record: keep what came before
                break
            entry, pid = parsed
            state.pid = state.pid if state.pid is not None else pid
    if entry is not None:
        state.finish(entry)
    named_rank = _rank_from_name(path)
    return TraceLog(
        path=str(path),
        rank=named_rank if named_rank is not None else state.rank,
        records=tuple(state.records),
        compile_times=tuple(state.times),
        torch_version=state.torch_version,
        pid=state.pid,
        lines=line_no,
        truncated=truncated,
    )


@contextmanager
def _open_text(path: Path) -> Iterator[Iterator[str]]:
    """The log's lines, split on `\\n` only: a payload line may hold a carriage return."""
    try:
        file = open(path, encoding="utf-8", errors="replace", newline="\n")
    except OSError as exc:
        raise AdvisorError(
            f"cannot read TORCH_TRACE log {one_line(str(path))}: {exc.strerror}"
        ) from exc
    with file:
        yield iter(file)


def _parse_record_line(path: Path, line_no: int, line: str) -> tuple[_Entry, int] | None:
    """A record's prefix line as an entry; None for a last line cut off mid-JSON."""
    match = _PREFIX.match(line)
    if match is None:
        raise _bad_line(path, line_no, "not a structured-trace record")
    try:
        metadata = json.loads(line[match.end() :])
    except json.JSONDecodeError as exc:
        if not line.endswith("\n"):
            return None
        raise _bad_line(path, line_no, f"its JSON is corrupt ({exc.msg})") from exc
    if not isinstance(metadata, dict):
        raise _bad_line(path, line_no, "its JSON is not an object")
    kept = trace_record_from(metadata)
    wants_payload = "has_payload" in metadata and (
        kept is not None or _artifact_name(metadata) == _TORCH_VERSION_ARTIFACT
    )
    entry = _Entry(metadata, kept, [] if wants_payload else None)
    return entry, int(match.group(1))


def _bad_line(path: Path, line_no: int, why: str) -> AdvisorError:
    return AdvisorError(f"{one_line(str(path))}, line {line_no}: {why}; is it a TORCH_TRACE log?")


def _artifact_name(metadata: dict[str, Any]) -> str | None:
    artifact = metadata.get("artifact")
    return str(artifact.get("name")) if isinstance(artifact, dict) else None


def _torch_version(payload: str) -> str | None:
    try:
        value = json.loads(payload)
    except json.JSONDecodeError:
        return None
    version = value.get("pytorch_version") if isinstance(value, dict) else None
    return str(version) if version else None


def _rank_from_name(path: Path) -> int | None:
    match = _RANK_IN_NAME.search(path.name)
    return int(match.group(1)) if match else None


def _seconds(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
