"""Capture in the same (real) compile: backend="eager" for structure. Checks the cases where
`explain` is wrong, and that a CaptureSession leaves no handler behind."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch

from advisor.measure import torch_adapter as ta
from advisor.measure.capture import CaptureSession, build_capture
from tests.cases.breaks import CASES, FILE, f_print, marker_line
from tests.support.compile import capture_workload


def run_case(name: str):
    case = CASES[name]
    extra = tuple(make() for make in case.extra_args)
    return capture_workload(case.build(), case.make_args(), backend="eager", extra_calls=extra)


@pytest.mark.parametrize("name", list(CASES))
def test_true_breaks_codes_and_lines(name: str) -> None:
    case = CASES[name]
    capture = run_case(name)
    assert [(s.gb_code, s.where.file, s.where.line) for s in capture.sites] == [
        (code, FILE, line) for code, line in case.expected()
    ]
    for s in capture.sites:
        assert s.gb_type and s.explanation
        assert s.where.code.endswith(f"# BREAK:{s.where.code.split(':')[-1]}")
        assert s.doc_url and s.gb_code and s.gb_code.lower() in s.doc_url
        assert s.frame_skipped == case.frame_skipped
    assert capture.notes == ()
    ta.reset_dynamo()


def test_data_dependent_branch_gets_registry_code_not_generic_jump() -> None:
    (s,) = run_case("if").sites
    assert (s.gb_code, s.gb_type) == ("GB0170", "Data-dependent branching")
    assert s.hints


def test_loop_break_is_one_skipped_frame_site() -> None:
    capture = run_case("loop")
    (s,) = capture.sites
    assert (s.gb_code, s.frame_skipped, s.skip_code) == ("GB0059", True, "GB7000")
    assert s.skipped_frames == ("0/0",)
    assert capture.graphs == ()
    assert capture.frames[0].skipped and capture.root_skip_break_id == "B1"


def test_submodule_break_once_with_the_callers_line() -> None:
    capture = run_case("module")
    (s,) = capture.sites
    assert s.compile_ids == ("0/0", "1/0")
    assert [(a.function, a.line) for a in s.also_at] == [("forward", marker_line("module") + 13)]
    assert [g.compile_id for g in capture.graphs] == ["0/0", "1/0", "2/0", "3/0"]
    assert capture.frame("3/0").resumes == "0/0"  # type: ignore[union-attr]
    assert capture.frame("2/0").resumes == "1/0"  # type: ignore[union-attr]


def test_two_breaks_in_a_row_and_graph_records() -> None:
    capture = run_case("double")
    assert [s.where.line for s in capture.sites] == [marker_line("double1"), marker_line("double2")]
    g = {g.compile_id: g for g in capture.graphs}
    assert g["0/0"].ops == 2 and g["0/0"].lines == (marker_line("double1") - 1,)
    assert g["1/0"].ops == 0 and g["1/0"].end_reason == "graph_break"
    assert g["2/0"].end_reason == "return_value" and g["2/0"].compile_s is not None


def test_recompile_reason_recorded() -> None:
    capture = run_case("recompile")
    assert [r.compile_id for r in capture.recompiles] == ["0/1", "1/1"]
    assert "size mismatch" in capture.recompiles[0].reason
    assert capture.sites[0].compile_ids == ("0/0", "0/1")


def test_session_removes_its_handler_and_restores_level() -> None:
    logger = logging.getLogger(ta.TRACE_LOGGER)
    before = (list(logger.handlers), logger.level)
    ta.reset_dynamo()
    with CaptureSession() as session:
        torch.compile(f_print, backend="eager")(torch.ones(4))
        assert len(logger.handlers) == len(before[0]) + 1
    assert (list(logger.handlers), logger.level) == before
    assert len(session.result().sites) == 1
    # nothing is recorded after exit
    n = len(session.records)
    ta.reset_dynamo()
    torch.compile(f_print, backend="eager")(torch.ones(4))
    assert len(session.records) == n


def test_parse_break_artifact_chain() -> None:
    text = (
        "Graph break in user code at /x/y.py:7\n"
        "Graph Break Reason: Failed to handle graph break gracefully. Skipping.\n\n"
        "Failed to trace builtin operator\n  Explanation: no print\n  Hint: move it\n\n"
        " For more details, please visit: https://x/gb/gb0059.html\n\n"
        "*** While handling this graph break, another graph break occurred: ***\n\n"
        "graph break in loop\n  Explanation: loop\n\n"
        "User code traceback:\n"
        '  File "/x/y.py", line 5, in outer\n    inner()\n'
        '  File "/x/y.py", line 7, in inner\n    print(1)\n'
    )
    parsed = ta.parse_break_artifact(text)
    assert parsed is not None
    assert [p.gb_code for p in parsed.parts] == ["GB0059", "GB7000"]
    assert parsed.parts[0].hints == ("move it",)
    assert [(f.line, f.function, f.code) for f in parsed.frames] == [
        (5, "outer", "inner()"),
        (7, "inner", "print(1)"),
    ]
    assert Path(parsed.file).name == "y.py" and parsed.line == 7


def _break_record(cid: str, stop: str, frames: list[tuple[str, int, str, str]]) -> ta.TraceRecord:
    body = "\n".join(f'  File "{f}", line {n}, in {fn}\n    {code}' for f, n, fn, code in frames)
    payload = (
        f"Graph break in user code at {stop}\n"
        "Graph Break Reason: Data-dependent branching\n  Explanation: branch\n"
        " For more details, please visit: https://x/gb/gb0170.html\n"
        f"User code traceback:\n{body}\n"
    )
    return ta.TraceRecord("dynamo_graph_break_reason", cid, 0, {}, payload)


def _metrics(cid: str, name: str, file: str, line: int, ops: int | None) -> ta.TraceRecord:
    data = {"co_name": name, "co_filename": file, "co_firstlineno": line, "graph_op_count": ops,
            "has_guarded_code": True}  # fmt: skip
    return ta.TraceRecord("compilation_metrics", cid, 0, data, None)


def test_a_library_break_met_from_the_callers_frame_is_one_site() -> None:
    # The user's frame calls into a library whose line breaks: Dynamo breaks the user's frame at
    # the call (its record says where the library broke) and then the library's own frame at the
    # same line. One site, at the library line, reached from the user's line, the caller's
    # line folded into `also_at`.
    lib = "/venv/lib/python3.11/site-packages/lib/gen.py"
    user = "/home/u/run.py"
    call = (user, 33, "run", "return m.generate(ids)")
    inner = (lib, 2413, "_prepare", "if x.any():")
    script = ("/home/u/main.py", 5, "<module>", "out = compiled(ids)")  # above the compile
    generate = (lib, 2847, "generate", "self._prepare()")
    records = [
        _break_record("0/0", f"{lib}:2413", [script, call, generate, inner]),
        _metrics("0/0", "run", user, 32, 0),
        _break_record("1/0", f"{lib}:2413", [inner]),
        _metrics("1/0", "_prepare", lib, 2400, 3),
    ]
    capture = build_capture(records)
    (s,) = capture.sites
    assert (s.gb_code, s.where.file, s.where.line, s.where.function) == (
        "GB0170",
        lib,
        2413,
        "_prepare",
    )
    # reached from the compiled function's own line, not from the script that called it
    assert s.reached_from is not None and (s.reached_from.file, s.reached_from.line) == (user, 33)
    assert [(a.file, a.line) for a in s.also_at] == [(user, 33)]
    assert s.compile_ids == ("0/0", "1/0")
    assert [f.end_break_id for f in capture.frames] == ["B1", "B1"]


def test_user_code_is_neither_installed_nor_this_tool() -> None:
    from advisor.measure import capture

    torch_dir = str(Path(torch.__file__).parent)
    advisor_dir = str(Path(capture.__file__).parent)
    assert capture.is_user_file("/home/u/model.py")
    assert not capture.is_user_file(f"{advisor_dir}/harness.py")
    assert not capture.is_user_file(f"{torch_dir}/nn/functional.py")
    assert not capture.is_user_file("/venv/lib/python3.11/site-packages/transformers/x.py")


def test_recompile_reason_is_one_line() -> None:
    raw = (
        "2/0: len(seen) == 6                                   # seen.append(x)  # m.py:71 in f"
        '\nUser stack trace:\n  File "m.py", line 71, in f\n    seen.append(x)'
    )
    assert ta.one_line_guard_reason(raw) == "2/0: len(seen) == 6 # seen.append(x) # m.py:71 in f"


def test_a_library_module_compiled_as_it_is_is_reached_from_no_user_line() -> None:
    # The model itself is what was compiled (a library's forward): the only user frame in the
    # traceback is the script above the compile, which is not where the break is reached from.
    lib = "/venv/lib/python3.11/site-packages/lib/model.py"
    script = ("/home/u/main.py", 5, "<module>", "out = compiled(ids)")
    forward = (lib, 80, "forward", "h = self.block(h)")
    inner = (lib, 120, "block", "if h.any():")
    records = [
        _break_record("0/0", f"{lib}:120", [script, forward, inner]),
        _metrics("0/0", "forward", lib, 70, 4),
    ]
    (site,) = build_capture(records).sites
    assert (site.where.file, site.where.line) == (lib, 120)
    assert site.reached_from is None


def test_the_users_line_is_kept_from_a_later_sighting_and_the_stack_from_the_first() -> None:
    # The user's forward breaks at its call into a library; the first record's traceback lacks
    # the user's own frame. The library's forward, compiled on its own, meets the break again
    # with the user's frame just above it: a compiled function, so its line is where the break
    # is reached from (a script above a compiled library function would not be).
    lib = "/venv/lib/python3.11/site-packages/lib/loss.py"
    user = "/home/u/align.py"
    script = ("/home/u/main.py", 5, "<module>", "out = compiled(x, y)")
    forward = (lib, 266, "forward", "values = routine(x, y)")
    setup = (lib, 158, "scaling", "d = max_diameter(x, y)")
    inner = (lib, 111, "max_diameter", "d = t.norm().item()")
    call = (user, 12, "forward", "return ot(self.proj(x), y)")
    records = [
        _break_record("0/0", f"{lib}:111", [script, forward, setup, inner]),
        _metrics("0/0", "forward", user, 10, 3),
        _break_record("1/0", f"{lib}:111", [script, call, forward, setup, inner]),
        _metrics("1/0", "forward", lib, 250, 2),
    ]
    (site,) = build_capture(records).sites
    assert site.reached_from is not None
    assert (site.reached_from.file, site.reached_from.line) == (user, 12)
    assert [(f.function, f.line) for f in site.via] == [("forward", 266), ("scaling", 158)]
    assert [(f.function, f.line) for f in site.stack] == [
        ("forward", 266), ("scaling", 158), ("max_diameter", 111)
    ]  # fmt: skip
    # the same library function compiled alone under a script: no user line reaches it
    alone = [records[2], records[3]]
    alone[0] = _break_record("1/0", f"{lib}:111", [script, forward, setup, inner])
    (site,) = build_capture(alone).sites
    assert site.reached_from is None
