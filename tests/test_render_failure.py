"""A render failure never loses a measured run, and a redacted record stays renderable.

- A redacted patch keeps its kind, line, functions and names and loses its text; every renderer
  says what it does without the diff (the `--redact` crash on a measured patch).
- `advisor run`, `advisor judge` and `advisor sweep --rejudge` write measurements.json before
  anything is judged or rendered; a failure after that is one line naming it and the
  `advisor judge FOLDER` command that renders the saved measurements again.
- Every committed example and every scenario's saved measurements judge and render in every
  format, with and without --redact, and so does any choice of their optional parts.
"""

from __future__ import annotations

import gzip
import json
import re
import shlex
import shutil
from collections.abc import Iterator
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor import runner
from advisor.cli import main
from advisor.core.artifacts import Measurements, measurements_from_json
from advisor.core.kinds import WhatIfKind
from advisor.core.model import FunctionEdit, Patch, Report
from advisor.core.redact import redact, redact_measurements
from advisor.judge import judge_saved
from advisor.render import report_io
from advisor.render.console import render_text
from advisor.render.view import build_view
from advisor.render.view_patches import REDACTED_DIFF
from tests.support.reports import FILE, full_report
from tests.test_advise import what_if as measured_what_if

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "reports" / "examples" / "moe_nonzero_routing"
SWEEP = ROOT / "tests" / "data" / "sweep"
SCENARIOS = ROOT / "tests" / "data" / "scenarios"
PATCH_TEXT = "SECRET_PATCH_LINE = torch.where(cond, a, b)"
BAD_INPUTS = ROOT / "docs" / "bad-inputs.md"


def saved_measurement_files() -> list[Path]:
    """Every committed example's measurements, the sweep fixture's, the zoo's and every
    scenario's (tests/data/scenarios, from one sweep of them all)."""
    files = sorted((ROOT / "reports" / "examples").rglob("measurements.json"))
    files += sorted(SWEEP.glob("*/measurements.json"))
    files += sorted((ROOT / "tests" / "data" / "zoo").glob("*.measurements.json.gz"))
    files += sorted(SCENARIOS.glob("*.measurements.json.gz"))
    return files


@cache
def load(path: Path) -> Measurements:
    raw = path.read_bytes()
    text = gzip.decompress(raw).decode() if path.suffix == ".gz" else raw.decode()
    return measurements_from_json(text)


def label(path: Path) -> str:
    return str(path.relative_to(ROOT))


def every_format(report: Report) -> dict[str, str]:
    """What each renderer writes: the report folder's files and the console at two widths."""
    files = report_io.render_files(report)
    return {**files, "text80": render_text(report, width=80), "text120": render_text(report, 120)}


def judged(measurements: Measurements) -> Report:
    return judge_saved(measurements)


# --- the redacted patch -------------------------------------------------------------------


def measured_patch_report() -> Report:
    """The hand-made report with its break fixed by a measured patch (the break's own what-if):
    the case whose knob note read `w.patch` after --redact had dropped it."""
    base = full_report()
    edit = FunctionEdit("trace", 5, 8, "def trace(x):\n    print(x)\n", "def trace(x):\n")
    patch = Patch(
        "side_effect", FILE, 7, (edit,), f"@@ -7 +7 @@\n-    print(x)\n+{PATCH_TEXT}\n", ("print",)
    )
    what_if = measured_what_if(
        knob="patch:tensor_branch@7",
        setting="tensor_branch",
        fix="rewrite",
        kind=WhatIfKind.PATCH,
        patch=replace(patch, kind="tensor_branch"),
    )
    entry = base.breaks[0]
    assert entry.decision is not None
    decision = replace(entry.decision, basis="measured", knob_outcome="removed", fix="rewrite")
    entry = replace(entry, decision=decision, what_if_knob=what_if.knob)
    action = replace(base.actions[0], kind="patch", fix="rewrite", patch=what_if.patch)
    return replace(
        base,
        breaks=(entry,),
        what_ifs=(*base.what_ifs, what_if),
        actions=(action, *base.actions[1:]),
    )


def test_a_redacted_patch_keeps_what_it_does_and_loses_its_text() -> None:
    report = redact(measured_patch_report())
    (patch,) = [w.patch for w in report.what_ifs if w.patch is not None]
    assert patch.redacted
    assert (patch.kind, patch.line, patch.names) == ("tensor_branch", 7, ("print",))
    assert patch.hunks == "" and all(e.before == e.after == "" for e in patch.edits)
    assert [e.qualname for e in patch.edits] == ["trace"] and patch.file == "demo.py"
    assert report.actions[0].patch == patch


def test_every_format_renders_a_redacted_measured_patch() -> None:
    plain = every_format(measured_patch_report())
    assert PATCH_TEXT in plain["report.md"] and REDACTED_DIFF not in plain["report.md"]
    redacted = every_format(redact(measured_patch_report()))
    for name, text in redacted.items():
        assert PATCH_TEXT not in text, name
    for name in ("report.json", "report.md", "text120"):  # what the patch does stays said
        said = re.sub(r"\s+", " ", redacted[name])
        assert "the `if` on a tensor value as `torch.where`" in said, name
    for name in ("report.md", "report.html", "text120"):
        assert "--redact removes source text" in redacted[name], name
    assert "a run without --redact shows the diff" in redacted["report.md"]


# --- measurements first ---------------------------------------------------------------------


@pytest.fixture
def failing_render(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def boom(_report: Report) -> dict[str, str]:
        raise RuntimeError("a renderer broke")

    monkeypatch.setattr(report_io, "render_files", boom)
    yield


def assert_one_line_with_rejudge(err: str, out: Path) -> None:
    (line,) = err.strip().splitlines()
    command = f"advisor judge {shlex.quote(str(out))}"
    assert line.startswith("advisor: error: judging or rendering failed (RuntimeError: ")
    assert f"saved in {out}/measurements.json: run {command} to render them again" in line


def test_a_render_failure_in_judge_keeps_the_measurements(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], failing_render: None
) -> None:
    out = tmp_path / "judged"
    assert main(["judge", str(EXAMPLE), "--out", str(out), "--quiet"]) == 1
    assert_one_line_with_rejudge(capsys.readouterr().err, out)
    assert sorted(p.name for p in out.iterdir()) == ["measurements.json"]
    assert report_io.load_measurements(out) == report_io.load_measurements(EXAMPLE)


def test_a_render_failure_in_run_keeps_the_measurements_and_they_render_again(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    saved = report_io.load_measurements(EXAMPLE)
    monkeypatch.setattr(runner, "measure", lambda _options, _progress: saved)
    monkeypatch.chdir(ROOT)
    out = tmp_path / "run"
    with monkeypatch.context() as broken:
        broken.setattr(report_io, "render_files", _raises)
        code = main(["run", "tests/targets/good.py:factory", "--out", str(out), "--quiet"])
    assert code == 1
    assert_one_line_with_rejudge(capsys.readouterr().err, out)
    assert report_io.load_measurements(out) == saved
    # the command the line names renders them, whole
    again = tmp_path / "again"
    assert main(["judge", str(out), "--out", str(again), "--quiet"]) == 0
    assert sorted(p.name for p in again.iterdir()) == sorted(report_io.REPORT_FILES)


def test_a_judging_failure_in_run_keeps_the_measurements(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import advisor.judge

    saved = report_io.load_measurements(EXAMPLE)
    monkeypatch.setattr(runner, "measure", lambda _options, _progress: saved)
    monkeypatch.setattr(advisor.judge, "judge_saved", _raises)
    monkeypatch.chdir(ROOT)
    out = tmp_path / "run"
    assert main(["run", "tests/targets/good.py:factory", "--out", str(out), "--redact"]) == 1
    assert_one_line_with_rejudge(capsys.readouterr().err, out)
    # --redact: what was saved is the redacted record, as the report would have been
    assert report_io.load_measurements(out) == redact_measurements(saved)


def test_one_targets_render_failure_does_not_stop_a_rejudged_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    saved = tmp_path / "saved"
    shutil.copytree(SWEEP, saved)
    real = report_io.render_files
    rendered: list[str] = []

    def fails_for_a(report: Report) -> dict[str, str]:
        rendered.append(report.workload.name)
        if len(rendered) == 1:
            raise RuntimeError("a renderer broke")
        return real(report)

    monkeypatch.setattr(report_io, "render_files", fails_for_a)
    out = tmp_path / "new"
    # the sweep goes on past the failed target, and its exit says one failed
    assert main(["sweep", "--rejudge", str(saved), "--out", str(out), "--workers", "1"]) == 1
    assert "re-judged 1 of 2 target(s)" in capsys.readouterr().err
    index = {t["name"]: t for t in json.loads((out / "index.json").read_text())["targets"]}
    assert index["a"]["report"] is None and index["b"]["report"] == "b/report.json"
    rejudge = f"run advisor judge {shlex.quote(str(out / 'a'))} to render them again"
    assert "a renderer broke" in index["a"]["error"] and rejudge in index["a"]["error"]
    assert [p.name for p in (out / "a").iterdir()] == ["measurements.json"]
    assert (out / "b" / "report.html").is_file()


def test_the_bad_inputs_row_is_what_a_render_failure_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], failing_render: None
) -> None:
    row = next(
        line for line in BAD_INPUTS.read_text().splitlines() if line.startswith("| a renderer ")
    )
    printed = row.split(" | ")[-1].strip("| `")
    out = tmp_path / "judged"
    assert main(["judge", str(EXAMPLE), "--out", str(out)]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    pattern = ".*".join(re.escape(part) for part in printed.split("…"))
    assert re.fullmatch(pattern, line), (printed, line)


def _raises(*_args: object, **_kwargs: object) -> object:
    raise RuntimeError("a renderer broke")


# --- every saved record, every format, with and without --redact ---------------------------


def test_the_saved_records_cover_the_reports_optional_parts() -> None:
    """So the next tests reach patches, placements, training, scripts, ranks and a failed mode."""
    records = [load(p) for p in saved_measurement_files()]
    kinds = {w.kind for m in records for w in m.what_ifs}
    assert {WhatIfKind.PATCH, WhatIfKind.DISABLE, WhatIfKind.REGIONAL} <= kinds
    assert any(m.capture.training is not None for m in records)
    assert any(m.script is not None for m in records)
    assert any(m.ranks for m in records)
    fullgraph = [m.mode("fullgraph") for m in records]
    assert any(f is not None and f.status == "failed" for f in fullgraph)
    assert len(list(SCENARIOS.glob("*.measurements.json.gz"))) >= 20


@pytest.mark.parametrize("path", saved_measurement_files(), ids=label)
def test_every_saved_record_renders_in_every_format_with_and_without_redact(path: Path) -> None:
    measurements = load(path)
    report = judged(measurements)
    every_format(report)
    redacted = every_format(redact(report))
    assert '"redacted": true' in redacted["report.json"]
    # a redacted run's saved measurements judge and render as well (`advisor judge` of it)
    every_format(judged(redact_measurements(measurements)))


def optional_parts(measurements: Measurements) -> st.SearchStrategy[Measurements]:
    """The record with any choice of its optional parts left out: each what-if, the script's
    survey, the ranks, the profile, the captured breaks."""
    indices = range(len(measurements.what_ifs))
    what_ifs = st.lists(st.sampled_from(indices), unique=True) if indices else st.just([])
    return st.builds(
        lambda keep, script, ranks, trace, sites: replace(
            measurements,
            what_ifs=tuple(measurements.what_ifs[i] for i in sorted(keep)),
            script=measurements.script if script else None,
            ranks=measurements.ranks if ranks else (),
            step_rank=measurements.step_rank if ranks else None,
            trace=measurements.trace if trace else None,
            capture=measurements.capture if sites else replace(measurements.capture, sites=()),
        ),
        what_ifs,
        st.booleans(),
        st.booleans(),
        st.booleans(),
        st.booleans(),
    )


RICH = ("patched_branch", "train_ddp", "script_infer_loop", "train_print", "disabled_helper")


@pytest.mark.parametrize("name", RICH)
def test_any_choice_of_optional_parts_renders(name: str) -> None:
    base = load(SCENARIOS / f"{name}.measurements.json.gz")

    @settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(optional_parts(base), st.booleans())
    def renders(measurements: Measurements, redacted: bool) -> None:
        report = judged(measurements)
        every_format(redact(report) if redacted else report)

    renders()


EXAMPLES = ROOT / "reports" / "examples"


@pytest.mark.parametrize(
    "folder", sorted(p.parent for p in EXAMPLES.rglob("measurements.json")), ids=label
)
def test_every_committed_example_is_what_its_measurements_judge_to(folder: Path) -> None:
    """The committed report.json says what its measurements.json judges to now: the same
    actions (kind, outcome, saving) and verdicts; after a rule or wording change,
    scripts/rerender_examples.py brings them up to date."""
    saved = report_io.load_report(folder)
    now = judged(report_io.load_measurements(folder))

    def said(report: Report) -> tuple[object, ...]:
        actions = tuple((a.kind, a.outcome, a.saving_ms) for a in report.actions)
        verdicts = tuple(e.decision.verdict if e.decision else None for e in report.breaks)
        return actions, verdicts

    assert said(saved) == said(now)
    assert json.loads((folder / "report.json").read_text())["headline"] == build_view(now).headline
