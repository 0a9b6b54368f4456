"""The readers of the files a user's own run leaves (`advisor.measure.traces`), on files recorded
from `tests/data/traces/tiny_job.py` (see `regenerate.py` there) and on traces written here:
a TORCH_TRACE log gives the capture the in-process listener gives, a profiler trace gives
per-step event trees the segmenter reads, the two join by compile id, and broken files give
one-line errors."""

from __future__ import annotations

import gzip
import json
import shutil
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import torch

from advisor.core.artifacts import Capture, TraceEvent
from advisor.core.errors import AdvisorError
from advisor.judge.segments import segment_call
from advisor.measure import torch_adapter as ta
from advisor.measure.capture import CaptureSession, build_capture
from advisor.measure.traces import (
    chrome_json,
    join_by_compile_id,
    pair_by_rank,
    read_kineto,
    read_torch_trace,
    read_trace_log,
)
from tests.data.traces.tiny_job import STEP_RECORD, tiny_step

DATA = Path(__file__).resolve().parent / "data" / "traces"
LOG_DIR = DATA / "torch_trace"
PROFILE = DATA / "profile_rank0.json"
PROFILE_GZ = DATA / "profile_rank0.json.gz"
TINY_IDS = ("0/0", "1/0", "2/0")  # the step's frame and its two resume functions


def _in_process_capture() -> Capture:
    """The same function captured by the in-process listener (Dynamo's eager backend: the
    capture is Dynamo's, whatever the backend)."""
    ta.reset_dynamo()
    try:
        with CaptureSession() as session:
            torch.compile(tiny_step, backend="eager")(torch.ones(8))
        return session.result()
    finally:
        ta.reset_dynamo()


def _sites(capture: Capture) -> list[tuple[Any, ...]]:
    """A capture's sites as comparable facts; files by name (the log holds the absolute paths of
    the machine that recorded it)."""
    return [
        (
            s.id,
            s.gb_code,
            s.gb_type,
            Path(s.where.file).name,
            s.where.line,
            s.where.function,
            s.compile_ids,
            s.skipped_frames,
            s.skip_code,
        )
        for s in capture.sites
    ]


def _graphs(capture: Capture) -> list[tuple[Any, ...]]:
    return [
        (g.compile_id, g.function, Path(g.file).name, g.lines, g.ops, g.end_reason)
        for g in capture.graphs
    ]


def _frames(capture: Capture) -> list[tuple[Any, ...]]:
    return [
        (f.compile_id, f.function, f.skipped, f.break_ids, f.end_break_id, f.resumes)
        for f in capture.frames
    ]


# --- TORCH_TRACE ------------------------------------------------------------------------------


def test_log_gives_the_capture_the_in_process_listener_gives() -> None:
    (log,) = read_torch_trace(LOG_DIR)
    from_file = build_capture(list(log.records))
    in_process = _in_process_capture()
    assert _sites(from_file) == _sites(in_process)
    assert _graphs(from_file) == _graphs(in_process)
    assert _frames(from_file) == _frames(in_process)
    assert [s.where.line for s in from_file.sites] == [25, 27]  # the branch, the helper call
    assert [s.gb_code for s in from_file.sites] == ["GB0170", "GB0098"]
    assert from_file.root_compile_id == "0/0" and from_file.notes == ()


def test_log_keeps_only_the_records_the_listener_keeps() -> None:
    log = read_trace_log(next(LOG_DIR.glob("*.log")))
    assert log.rank == 0  # from the file name, as torchrun names it
    assert log.torch_version and log.torch_version.startswith("2.")
    assert log.pid is not None and not log.truncated
    assert log.lines == len(next(LOG_DIR.glob("*.log")).read_text().split("\n")) - 1
    events = {r.event for r in log.records}
    assert events == {
        "dynamo_start",
        "compilation_metrics",
        "dynamo_output_graph",
        "dynamo_graph_break_reason",
    }
    graphs = [r for r in log.records if r.event == "dynamo_output_graph"]
    assert all(r.payload and "class GraphModule" in r.payload for r in graphs)
    metrics = [r for r in log.records if r.event == "compilation_metrics"]
    assert all(r.payload is None and "inductor_config" not in r.data for r in metrics)
    assert [t.compile_id for t in log.compile_times] == list(TINY_IDS)
    assert all(t.entire_frame_s and t.entire_frame_s > 0 for t in log.compile_times)
    assert log.compile_time("1/0") == log.compile_times[1]


def test_log_cut_off_mid_record_keeps_what_came_before(tmp_path: Path) -> None:
    text = next(LOG_DIR.glob("*.log")).read_text()
    cut = text.index('{"compilation_metrics"', text.index('"frame_id": 2'))
    (tmp_path / "dedicated_log_torch_trace_x.log").write_text(text[: cut + 40])
    (log,) = read_torch_trace(tmp_path)
    assert log.truncated and log.rank is None
    assert [t.compile_id for t in log.compile_times] == ["0/0", "1/0"]
    graph_at = text.index("class GraphModule", text.index('{"dynamo_output_graph"'))
    (tmp_path / "dedicated_log_torch_trace_x.log").write_text(text[: graph_at + 30])
    (cut_in_payload,) = read_torch_trace(tmp_path)
    assert cut_in_payload.truncated and cut_in_payload.compile_times == ()
    (graph,) = [r for r in cut_in_payload.records if r.event == "dynamo_output_graph"]
    assert graph.payload is not None and graph.payload == "class GraphModule(torch.nn.Mod"


def test_log_rank_from_the_records_and_a_glog_rank_prefix(tmp_path: Path) -> None:
    text = next(LOG_DIR.glob("*.log")).read_text()
    ranked = text.replace('"frame_id": ', '"rank": 2, "frame_id": ').replace("\nV", "\n[rank2]:V")
    (tmp_path / "dedicated_log_torch_trace_abc.log").write_text(ranked)
    (log,) = read_torch_trace(tmp_path)
    assert log.rank == 2
    assert [r.event for r in log.records] == [r.event for r in read_torch_trace(LOG_DIR)[0].records]


def test_log_errors_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(AdvisorError, match="no TORCH_TRACE log"):
        read_torch_trace(tmp_path)
    with pytest.raises(AdvisorError, match="no such TORCH_TRACE folder"):
        read_torch_trace(tmp_path / "missing")
    bad = tmp_path / "dedicated_log_torch_trace_bad.log"
    bad.write_text("hello\n")
    with pytest.raises(AdvisorError, match=r"line 1: not a structured-trace record") as err:
        read_torch_trace(tmp_path)
    assert "\n" not in str(err.value)
    bad.write_text('V1208 01:00:17.564000 5506 torch/x.py:1] {"oops": \nV1208 x\n')
    with pytest.raises(AdvisorError, match="line 1: its JSON is corrupt"):
        read_torch_trace(tmp_path)


# --- profiler traces --------------------------------------------------------------------------


def _region(event: TraceEvent, compile_id: str) -> TraceEvent | None:
    if event.kind == "region" and event.compile_id == compile_id:
        return event
    return next((r for c in event.children if (r := _region(c, compile_id))), None)


@pytest.mark.parametrize("path", [PROFILE, PROFILE_GZ], ids=["json", "gz"])
def test_profile_steps_and_their_nested_regions(path: Path) -> None:
    profile = read_kineto(path)
    assert profile.rank == 0 and profile.device == "cpu"
    assert [s.name for s in profile.steps] == ["ProfilerStep#2", "ProfilerStep#3"]
    for step in profile.steps:
        assert step.region_ids == TINY_IDS
        call = step.call
        assert call.kind == "record" and call.start_us == 0.0 and call.duration_us > 0
        outer = _region(call, "0/0")
        assert outer is not None and _region(outer, "1/0") is not None  # a resume runs inside
        middle = _region(outer, "1/0")
        assert middle is not None and _region(middle, "2/0") is not None
        assert any(c.kind == "graph_call" for c in outer.children)
        # the branch's eager op sits in region 0/0, outside its graph call
        assert any(c.name == "aten::is_nonzero" for c in outer.children)
    assert profile.compile_ids == TINY_IDS
    assert profile.trace().calls == tuple(s.call for s in profile.steps)


def test_gz_and_plain_read_the_same() -> None:
    assert read_kineto(PROFILE).steps == read_kineto(PROFILE_GZ).steps


@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_chunk_boundaries_anywhere(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks that cut every number, literal, string and escape somewhere read the same."""
    whole = read_kineto(PROFILE)
    monkeypatch.setattr(chrome_json, "_CHUNK", chunk)
    assert read_kineto(PROFILE) == whole
    assert read_kineto(PROFILE_GZ).steps == whole.steps


def test_user_step_record_as_the_step() -> None:
    profile = read_kineto(PROFILE, step_name=STEP_RECORD)
    assert [s.name for s in profile.steps] == [STEP_RECORD, STEP_RECORD]
    assert all(s.region_ids == TINY_IDS for s in profile.steps)
    by_step = read_kineto(PROFILE)
    assert all(
        mine.call.duration_us < theirs.call.duration_us
        for mine, theirs in zip(profile.steps, by_step.steps, strict=True)
    )


def test_steps_segment_with_the_log_capture_into_break_gaps() -> None:
    (log,) = read_torch_trace(LOG_DIR)
    capture = build_capture(list(log.records))
    for step in read_kineto(PROFILE).steps:
        segments = segment_call(step.call, capture).segments
        total = sum(s.duration_us for s in segments)
        assert total == pytest.approx(step.call.duration_us, abs=0.01)
        gaps = {(s.compile_id, s.break_id) for s in segments if s.kind == "gap"}
        assert gaps == {("0/0", "B1"), ("1/0", "B2")}
        assert {s.compile_id for s in segments if s.kind == "compiled"} == set(TINY_IDS)


def test_join_by_compile_id_and_rank(tmp_path: Path) -> None:
    (log,) = read_torch_trace(LOG_DIR)
    profile = read_kineto(PROFILE)
    joined = join_by_compile_id(log, profile)
    assert joined.rank == 0 and joined.consistent
    assert joined.matched == TINY_IDS
    assert joined.only_in_log == joined.only_in_profile == joined.without_region == ()
    other = _write_trace(tmp_path / "other.json", _cpu_step_events("9/0"))
    mismatched = join_by_compile_id(log, read_kineto(other))
    assert mismatched.only_in_profile == ("9/0",) and not mismatched.consistent
    assert mismatched.only_in_log == TINY_IDS
    shutil.copy(next(LOG_DIR.glob("*.log")), tmp_path / "dedicated_log_torch_trace_rank_1_x.log")
    shutil.copy(next(LOG_DIR.glob("*.log")), tmp_path / "dedicated_log_torch_trace_rank_0_x.log")
    logs = read_torch_trace(tmp_path)
    assert [lg.rank for lg in logs] == [0, 1]
    with pytest.raises(AdvisorError, match="rank 1 has no profile"):
        pair_by_rank(logs, (profile,))
    with pytest.raises(AdvisorError, match="is rank 1 but profiler trace"):
        join_by_compile_id(logs[1], profile)
    assert [j.matched for j in pair_by_rank(logs[:1], (profile,))] == [TINY_IDS]


# --- synthetic traces -------------------------------------------------------------------------


def _x(name: str, ts: float, dur: float, cat: str = "cpu_op", tid: int = 1, **args: Any) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": 7, "tid": tid, "ts": ts, "dur": dur,
            "args": args}  # fmt: skip


def _cpu_step_events(region: str = "0/0") -> list[dict]:
    return [
        _x("ProfilerStep#1", 1000.0, 100.0, cat="user_annotation"),
        _x(f"Torch-Compiled Region: {region}", 1010.0, 50.0),
    ]


def _write_trace(path: Path, events: list[dict], **header: Any) -> Path:
    body = {"schemaVersion": 1, **header, "traceEvents": events, "traceName": str(path)}
    path.write_text(json.dumps(body, indent=1))
    return path


def test_kernels_are_charged_to_the_region_that_launched_them(tmp_path: Path) -> None:
    launch = "cudaLaunchKernel"
    events = [
        # kernels first: a file may list device activity before the CPU side
        _x("triton_poi_0", 5000.0, 40.0, cat="kernel", tid=7, correlation=11, stream=7),
        _x("triton_poi_1", 5100.0, 25.0, cat="kernel", tid=7, correlation=12, stream=7),
        _x("eager_mul", 5200.0, 9.0, cat="kernel", tid=7, correlation=13, stream=7),
        _x("stray", 9000.0, 5.0, cat="kernel", tid=7, correlation=99, stream=7),
        _x("ProfilerStep#4", 1000.0, 900.0, cat="user_annotation"),
        _x("TorchDynamo Cache Lookup", 1010.0, 5.0),
        _x("Torch-Compiled Region: 0/0", 1020.0, 600.0),
        _x("## Call CompiledFxGraph abc ##", 1030.0, 100.0),
        _x(launch, 1040.0, 10.0, cat="cuda_runtime", correlation=11),
        _x("aten::mul", 1200.0, 50.0),  # the break's eager op, in 0/0's gap
        _x(launch, 1210.0, 8.0, cat="cuda_runtime", correlation=13),
        _x("Torch-Compiled Region: 1/0", 1300.0, 200.0),  # the resume function, nested
        _x("## Call CompiledFxGraph def ##", 1310.0, 100.0),
        _x(launch, 1320.0, 10.0, cat="cuda_runtime", correlation=12),
        _x("ac2g", 1320.0, 0.0, cat="ac2g"),
        _x("aten::add", 2000.0, 5.0),  # after the step: dropped
        _x("aten::add", 1100.0, 5.0, tid=2),  # another thread: dropped
        {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 11, "pid": 7, "tid": 1, "ts": 1040.0},
    ]
    path = _write_trace(tmp_path / "worker.pt.trace.json", events,
                        distributedInfo={"rank": 3, "world_size": 4})  # fmt: skip
    profile = read_kineto(path)
    assert profile.device == "cuda" and profile.rank == 3
    assert profile.kernels == 3 and profile.kernels_unmatched == 1
    (step,) = profile.steps
    assert step.region_ids == ("0/0", "1/0")
    outer, inner = _region(step.call, "0/0"), _region(step.call, "1/0")
    assert outer is not None and inner is not None
    assert step.call.device_us == outer.device_us == 74.0
    assert inner.device_us == 25.0
    graph_call = next(c for c in outer.children if c.kind == "graph_call")
    assert graph_call.device_us == 40.0
    mul = next(c for c in outer.children if c.name == "aten::mul")
    assert mul.device_us == 9.0 and mul.children == ()  # folded, its launch counted
    assert mul.n_events == 2
    assert profile.events_kept == 9


def test_profile_errors_are_one_line(tmp_path: Path) -> None:
    no_region = _write_trace(tmp_path / "a.json", _cpu_step_events()[:1])
    with pytest.raises(AdvisorError, match=r"no compiled region \(Torch-Compiled Region"):
        read_kineto(no_region)
    no_step = _write_trace(tmp_path / "b.json", _cpu_step_events()[1:])
    with pytest.raises(AdvisorError, match="no ProfilerStep#N span"):
        read_kineto(no_step)
    with pytest.raises(AdvisorError, match="no 'my_step' span"):
        read_kineto(PROFILE, step_name="my_step")
    text = PROFILE.read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    with pytest.raises(AdvisorError, match="truncated"):
        read_kineto(cut)
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text(text.replace('"ph": "X"', '"ph" "X"', 3))
    with pytest.raises(AdvisorError, match="is not valid JSON"):
        read_kineto(corrupt)
    raw = PROFILE_GZ.read_bytes()
    cut_gz = tmp_path / "cut.json.gz"
    cut_gz.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(AdvisorError, match="truncated or corrupt gzip") as err:
        read_kineto(cut_gz)
    assert "\n" not in str(err.value)
    bad_gz = tmp_path / "bad.json.gz"
    bad_gz.write_bytes(raw[:10] + bytes(200))
    with pytest.raises(AdvisorError, match="truncated or corrupt gzip"):
        read_kineto(bad_gz)
    with pytest.raises(AdvisorError, match="cannot be opened"):
        read_kineto(tmp_path / "missing.json")


def test_bare_array_and_trailing_comma(tmp_path: Path) -> None:
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(_cpu_step_events())[:-1] + ",]")
    (step,) = read_kineto(bare).steps
    assert step.region_ids == ("0/0",)


def test_python_function_events_kept_or_left_out(tmp_path: Path) -> None:
    python = _x("job.py(22): tiny_step", 1005.0, 80.0, cat="python_function")
    path = _write_trace(tmp_path / "stack.json", [*_cpu_step_events(), python])
    (with_stack,) = read_kineto(path).steps
    assert [c.name for c in with_stack.call.children] == [python["name"]]
    assert with_stack.call.children[0].children[0].compile_id == "0/0"
    (without,) = read_kineto(path, with_python=False).steps
    assert [c.kind for c in without.call.children] == ["region"]


def test_memory_follows_events_kept_not_file_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chrome_json, "_CHUNK", 1 << 15)
    filler = [_x(f"aten::op{i}", 10_000.0 + i, 0.5, tid=2) for i in range(20_000)]
    path = tmp_path / "big.json.gz"
    body = {"traceEvents": [*_cpu_step_events(), *filler]}
    path.write_bytes(gzip.compress(json.dumps(body).encode(), compresslevel=1))
    size = len(json.dumps(body))
    tracemalloc.start()
    try:
        profile = read_kineto(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert profile.events_kept == 1
    assert size > 2_000_000 and peak < size / 8
