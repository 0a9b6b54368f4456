"""The code the zoo surveys share (benchmarks/survey_common.py): short paths, the rough eager
timing, the command line, and the parent's reading of what a child printed. The surveys
themselves compile models and are not run here."""

from __future__ import annotations

import argparse
import os
import sysconfig
from pathlib import Path

import pytest

from benchmarks import survey_common
from benchmarks.survey_common import (
    ROOT,
    add_survey_arguments,
    child_env,
    child_record,
    chosen_models,
    median_ms,
    short_path,
    timed_out_record,
)

MARKER = "SURVEY-RESULT "


def test_short_path_by_package_repository_and_stdlib() -> None:
    site = os.path.join("/v", "lib", "site-packages", "pyro", "infer", "svi.py")
    assert short_path(site) == os.path.join("pyro", "infer", "svi.py")
    assert short_path(str(ROOT / "benchmarks" / "zoo" / "hf_models.py")) == os.path.join(
        "benchmarks", "zoo", "hf_models.py"
    )
    stdlib = sysconfig.get_paths()["stdlib"]
    assert short_path(os.path.join(stdlib, "inspect.py")) == "stdlib/inspect.py"
    assert short_path("/elsewhere/x.py") == "/elsewhere/x.py"


def test_median_ms_warms_up_then_times_every_call() -> None:
    calls: list[int] = []
    assert median_ms(lambda: calls.append(1), calls=5) >= 0.0
    assert len(calls) == survey_common.WARMUP_CALLS + 5


def test_survey_arguments_and_model_choice() -> None:
    parser = argparse.ArgumentParser()
    add_survey_arguments(parser, "libzoo", Path("/out"), 600, 1)
    args = parser.parse_args(["a", "--threads", "2"])
    assert (args.names, args.out, args.timeout, args.threads) == (["a"], Path("/out"), 600, 2)
    known = {"a": 1, "b": 2}
    assert chosen_models(parser, [], known) == ["a", "b"]
    assert chosen_models(parser, ["b"], known) == ["b"]
    with pytest.raises(SystemExit):
        chosen_models(parser, ["b", "nope"], known)


def test_child_env_is_offline_and_imports_this_repository(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTHONPATH", "/mine")
    env = child_env(OMP_NUM_THREADS="1")
    assert env["PYTHONPATH"] == os.pathsep.join([str(ROOT), "/mine"])
    assert (env["HF_HUB_OFFLINE"], env["TRANSFORMERS_OFFLINE"], env["OMP_NUM_THREADS"]) == (
        "1",
        "1",
        "1",
    )
    monkeypatch.delenv("PYTHONPATH")
    assert child_env()["PYTHONPATH"] == str(ROOT)


def test_child_record_reads_the_marked_line_or_quotes_the_log(tmp_path: Path) -> None:
    log = tmp_path / "m.log"
    log.write_text("warning\nRuntimeError: boom\n")
    printed = f"noise\n{MARKER}" + '{"model": "m", "graphs": 2}\n'
    assert child_record("m", printed, log, 0, 12.34, MARKER) == {
        "model": "m",
        "graphs": 2,
        "survey_s": 12.3,
    }
    assert child_record("m", "noise\n", log, -11, 1.0, MARKER) == {
        "model": "m",
        "error": "exit -11: RuntimeError: boom",
        "survey_s": 1.0,
    }
    log.write_text("")
    assert child_record("m", "", log, 1, 0.0, MARKER)["error"] == "exit 1: "
    assert timed_out_record("m", 300.0) == {"model": "m", "error": "timeout after 300 s"}


def test_libzoo_first_compiled_call_records_output_or_failure() -> None:
    """With the eager backend (Dynamo alone): an output is compared, a raise is recorded."""
    torch = pytest.importorskip("torch")
    from benchmarks.libzoo.survey import _compiled_first_call

    def plus_one(x: torch.Tensor) -> torch.Tensor:
        return x + 1

    def fails(x: torch.Tensor) -> torch.Tensor:
        raise ValueError("no")

    x = torch.zeros(2)
    ok = _compiled_first_call(plus_one, (x,), {}, lambda out: float(out.sum()), backend="eager")
    assert ok == {"ok": True, "max_abs_diff": 2.0}
    failed = _compiled_first_call(fails, (x,), {}, lambda out: 0.0, backend="eager")
    assert (failed["ok"], failed["error_type"], failed["message"]) == (False, "ValueError", "no")
