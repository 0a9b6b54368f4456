"""The Python API: `advisor.analyse` runs the pipeline and leaves the process as it found it;
its report saves itself (with its measurements) and shows inline; `import advisor` stays cheap
and torch-free."""

from __future__ import annotations

import html
import logging
from pathlib import Path
from typing import Any

import pytest
import torch

import advisor
from advisor import runner
from advisor.api import analysed
from advisor.core.artifacts import measurements_from_json
from advisor.core.errors import AdvisorError
from advisor.core.model import report_from_json, to_jsonable
from advisor.render.report_io import REPORT_FILES
from tests.support.no_torch import run_without_torch
from tests.support.reports import full_report, measurements_of

ROOT = Path(__file__).resolve().parent.parent


class Scale(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


def process_state() -> dict[str, Any]:
    logger = logging.getLogger("torch._dynamo")
    return {
        "capture_scalar_outputs": torch._dynamo.config.capture_scalar_outputs,
        "reorderable": set(torch._dynamo.config.reorderable_logging_functions),
        "dynamo_level": logger.level,
        "dynamo_handlers": list(logger.handlers),
        "threads": torch.get_num_threads(),
        "grad": torch.is_grad_enabled(),
        "rng": torch.random.get_rng_state().clone(),
    }


def same_state(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return all(torch.equal(a[k], b[k]) if k == "rng" else a[k] == b[k] for k in a)


def untidy_pipeline(seen: dict[str, Any], fail: bool = False) -> Any:
    """A stand-in for the pipeline that changes every global `analyse` promises to restore."""

    def run(workload: Any, options: Any, device: str, progress: Any) -> runner.RunResult:
        seen.update(workload=workload, options=options, device=device)
        torch._dynamo.config.capture_scalar_outputs = True
        torch._dynamo.config.reorderable_logging_functions.add(print)  # mutated in place
        logger = logging.getLogger("torch._dynamo")
        logger.setLevel(logging.CRITICAL)
        logger.addHandler(logging.NullHandler())
        torch.set_num_threads(1 if torch.get_num_threads() != 1 else 2)
        torch.set_grad_enabled(False)
        torch.rand(3)  # advances the random state
        if fail:
            raise AdvisorError("the workload fails in eager mode: boom")
        return runner.RunResult(full_report(), measurements_of(full_report()))

    return run


@pytest.mark.parametrize("fail", [False, True])
def test_analyse_restores_globals(monkeypatch: pytest.MonkeyPatch, fail: bool) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(runner, "run_workload", untidy_pipeline(seen, fail))
    before = process_state()
    x = torch.ones(4)
    if fail:
        with pytest.raises(AdvisorError, match="fails in eager mode"):
            advisor.analyse(Scale(), x, progress=False)
    else:
        report = advisor.analyse(Scale(), x, kwargs={}, repeats=4, what_if=False, progress=False)
        assert isinstance(report, advisor.api.AnalysedReport)
        assert to_jsonable(report) == to_jsonable(full_report())
    assert same_state(before, process_state())
    workload, options = seen["workload"], seen["options"]
    assert isinstance(workload.fn, Scale) and workload.args == (x,) and workload.name == "Scale"
    assert options.target == f"{Scale.__module__}.Scale (Python API)"  # the class, not the instance
    assert seen["device"] == "cpu"  # where the input lives
    if not fail:
        assert (options.settings.repeats, options.settings.what_if) == (4, False)


def test_analyse_takes_a_training_step_with_its_model_compiled_in_place(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(runner, "run_workload", untidy_pipeline(seen, False))
    model = Scale()
    opt = torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.1)

    def step(x: torch.Tensor) -> torch.Tensor:
        loss = model(x).sum()
        opt.zero_grad()
        return loss

    advisor.analyse(step, torch.ones(4), compiled_module=model, progress=False)
    workload = seen["workload"]
    assert workload.fn is step and workload.compiled_module is model
    with pytest.raises(AdvisorError, match=r"compiled_module=\.\.\.\) needs an nn\.Module"):
        advisor.analyse(step, torch.ones(4), compiled_module=step, progress=False)


def test_analyse_rejects_unknown_options_and_non_callables() -> None:
    with pytest.raises(TypeError, match=r"unknown option.*repeat;"):
        advisor.analyse(Scale(), torch.ones(2), repeat=3)
    # isolation runs targets by name in worker processes: refused, not silently ignored
    for option in ({"isolate": True}, {"timeout_s": 10.0}):
        with pytest.raises(AdvisorError, match="use `advisor run TARGET --isolate`"):
            advisor.analyse(Scale(), torch.ones(2), progress=False, **option)
    with pytest.raises(AdvisorError, match=r"needs a function or nn\.Module, got int"):
        advisor.analyse(3, progress=False)


def test_save_writes_every_file_and_never_overwrites(tmp_path: Path) -> None:
    report = analysed(full_report(), measurements_of(full_report()))
    out = report.save(tmp_path / "r")
    assert sorted(p.name for p in out.iterdir()) == sorted(REPORT_FILES)
    assert "trace.json" in REPORT_FILES and "measurements.json" in REPORT_FILES
    assert report_from_json((out / "report.json").read_text()) == full_report()
    saved = measurements_from_json((out / "measurements.json").read_text())
    assert saved == measurements_of(full_report())
    before = (out / "report.md").read_bytes()
    with pytest.raises(AdvisorError, match="never overwritten"):
        report.save(out)
    assert (out / "report.md").read_bytes() == before


def test_repr_html_is_the_report_in_an_iframe() -> None:
    shown = analysed(full_report(), None)._repr_html_()
    assert shown.startswith("<iframe srcdoc=") and shown.endswith("</iframe>")
    page = html.unescape(shown.split('srcdoc="', 1)[1].split('" title=', 1)[0])
    assert page.startswith("<!DOCTYPE html>") and "advisor report: demo" in page
    assert '"' not in shown.split('srcdoc="', 1)[1].split('" title=', 1)[0]  # attribute-safe


def test_import_advisor_is_torch_free() -> None:
    proc = run_without_torch(
        "import advisor, advisor.gate.check, advisor.testing, advisor.render.trace\n"
        "import advisor.render.check, advisor.core.identity, advisor.core.files\n"
        "import advisor.judge.attribute, advisor.judge.advise, advisor.gate.compare\n"
        "import advisor.render, advisor.core.model\n"
        "from advisor.api import analysed\n"
        "from tests.support.reports import full_report\n"
        "analysed(full_report(), None)._repr_html_()\n"
        "print(callable(advisor.analyse))\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True"


@pytest.mark.inductor
def test_analyse_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.targets.tiny import factory

    monkeypatch.chdir(tmp_path)
    fn, args = factory("cpu")
    before = process_state()
    report = advisor.analyse(
        fn, *args, repeats=3, profile_calls=3, what_if=False, budget_s=5, progress=False
    )
    assert same_state(before, process_state())
    assert list(tmp_path.iterdir()) == []  # nothing written unless asked
    (entry,) = report.breaks
    assert (entry.site.gb_code, Path(entry.site.where.file).name, entry.site.where.line) == (
        "GB0059",
        "tiny.py",
        8,
    )
    assert report.mode("default") is not None and report.actions is not None
    assert sorted(p.name for p in report.save("saved").iterdir()) == sorted(REPORT_FILES)
