"""`advisor sweep`: manifest validation, the runner's bookkeeping (with a fake command), the
zoo aggregation on typed fixture reports, re-judging a saved sweep, and one small real sweep on
each engine."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.core.errors import AdvisorError
from advisor.core.identity import BreakIdentity
from advisor.core.model import BreakEntry, Report
from advisor.core.paths import display_path
from advisor.render.report_io import load_report
from advisor.sweep.aggregate import build_zoo, summarise_report, zoo_from_json
from advisor.sweep.compare import compare_zoos
from advisor.sweep.folder import load_zoo
from advisor.sweep.manifest import ManifestError, TargetSpec, load_manifest
from advisor.sweep.rejudge import NO_MEASUREMENTS
from advisor.sweep.render import (
    render_compare_markdown,
    render_html,
    render_json,
    render_markdown,
)
from advisor.sweep.runner import SweepOptions, run_sweep
from tests.support.no_torch import run_without_torch

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "sweep"
TINY = ROOT / "tests" / "targets" / "tiny.py"
GOOD = ROOT / "tests" / "targets" / "good.py"
MISBEHAVING = ROOT / "tests" / "targets" / "sweep_targets.py"
# The sweeps' own machinery is under test, not the replicated protocol (test_replicated_run's):
# one process per target keeps the real sweeps affordable.
FAST_RUN = (
    "options = { quick = true, no_what_if = true, repeats = 3, target_ci = 0, profile_calls = 3, "
    "budget = 5 }"
)


def write_manifest(folder: Path, body: str, name: str = "zoo.toml") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


# --- manifest --------------------------------------------------------------------------------

GOOD_MANIFEST = """\
[sweep]
name = "transformers-zoo"
timeout_s = 900

[defaults]
device = "cpu"
repeats = 10

[[targets]]
name = "mixtral"
target = "hf_models.py:build"
params = { model = "mixtral", layers = 2 }
options = { repeats = 5, no_what_if = true }

[[targets]]
name = "scenario"
target = "print_logging"

[[targets]]
name = "module"
target = "pkg.models:build"
[targets.options]
budget = 2.5
no_what_if = false
"""


def test_manifest_good(tmp_path: Path) -> None:
    manifest = load_manifest(write_manifest(tmp_path, GOOD_MANIFEST))
    assert manifest.name == "transformers-zoo" and manifest.timeout_s == 900.0
    mixtral, scenario, module = manifest.targets
    assert mixtral.target == f"{tmp_path.resolve()}/hf_models.py:build"
    assert mixtral.params == {"model": "mixtral", "layers": 2}
    assert mixtral.options == {"device": "cpu", "repeats": 5, "no_what_if": True}
    assert mixtral.args == (
        "--param", 'model="mixtral"', "--param", "layers=2",
        "--device", "cpu", "--repeats", "5", "--no-what-if",
    )  # fmt: skip
    assert scenario.target == "print_logging"
    assert scenario.args == ("--device", "cpu", "--repeats", "10")
    assert module.target == "pkg.models:build"
    assert module.args == ("--device", "cpu", "--repeats", "10", "--budget", "2.5")


TARGET = '[[targets]]\nname = "a"\ntarget = "clean_mlp"\n'


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[sweep\nname = "x"\n', "zoo.toml: not valid TOML: "),
        ('colour = "red"\n' + TARGET, "zoo.toml:1: the manifest: unknown key 'colour'"),
        (
            '[sweep]\nname = "x"\ntimeout = 3\n' + TARGET,
            "zoo.toml:3: [sweep]: unknown key 'timeout'",
        ),
        ("[sweep]\ntimeout_s = -1\n" + TARGET, "zoo.toml:2: [sweep] timeout_s must be a positive"),
        ("[sweep]\nname = 3\n" + TARGET, "zoo.toml:2: [sweep] name must be"),
        (
            "[defaults]\nrepeats = 0\n" + TARGET,
            "zoo.toml:2: [defaults]: option 'repeats' is invalid",
        ),
        ("[defaults]\nrepeat = 3\n" + TARGET, "zoo.toml:2: [defaults]: unknown option 'repeat'"),
        ('[defaults]\nout = "x"\n' + TARGET, "unknown option 'out'"),
        ("[sweep]\n", "zoo.toml: the manifest needs at least one [[targets]]"),
        (TARGET + TARGET, "zoo.toml:5: duplicate target name 'a'"),
        (TARGET + '[[targets]]\nname = "b"\n', "zoo.toml:4: target 'b': missing 'target'"),
        (TARGET + '[[targets]]\ntarget = "x"\n', "zoo.toml:4: [[targets]] #2: missing 'name'"),
        (TARGET + "parms = { a = 1 }\n", "zoo.toml:4: target 'a': unknown key 'parms'"),
        ('[[targets]]\nname = "a"\ntarget = 3\n', "zoo.toml:3: target 'a': 'target' must be a non"),
        ('[[targets]]\nname = "a b"\ntarget = "x"\n', "zoo.toml:2: target 'a b': a name is"),
        (TARGET + 'params = "model=x"\n', "zoo.toml:4: target 'a': params must be a table"),
        (TARGET + "params = { 1x = 2 }\n", "zoo.toml:4: target 'a': param '1x' is not a Python"),
        (TARGET + "options = { no_what_if = 1 }\n", "option 'no_what_if' is a flag"),
        (TARGET + "options = { repeats = true }\n", "option 'repeats' must be a string or a"),
        (TARGET + "options = { repeats = 2.5 }\n", "zoo.toml:4: target 'a': options: option 're"),
        (TARGET + "[targets.options]\nbudget = 0\n", "zoo.toml:5: target 'a': options: option 'b"),
        ("targets = 3\n", "zoo.toml:1: the manifest needs at least one [[targets]] table"),
    ],
)
def test_manifest_errors(body: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(ManifestError) as caught:
        load_manifest(write_manifest(tmp_path, body))
    text = str(caught.value)
    assert "\n" not in text and message in text


def test_manifest_error_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sweep", str(tmp_path / "missing.toml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"advisor: error: manifest not found: {tmp_path / 'missing.toml'}"]


# --- the runner, with a fake command ---------------------------------------------------------

# Each fake target is a short Python process chosen by the target's name prefix; argv[1] is
# its report folder.
_FAKE = {
    "ok": f"import shutil, sys; shutil.copy({str(DATA / 'a' / 'report.json')!r}, "
    "sys.argv[1] + '/report.json')",
    "fail": "import sys; print('advisor: measuring', file=sys.stderr); "
    "print('advisor: error: no weights here', file=sys.stderr); sys.exit(2)",
    "hang": "import subprocess, sys, time; "
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
    "open(sys.argv[1] + '/grandchild.pid', 'w').write(str(child.pid)); time.sleep(600)",
    "crash": "import os, signal, sys; print('going down', file=sys.stderr); "
    "os.kill(os.getpid(), signal.SIGKILL)",
}


class FakeCommand:
    """Stands in for `advisor run`; remembers which targets it was asked to run."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    def __call__(self, spec: TargetSpec, out_dir: Path) -> list[str]:
        self.ran.append(spec.name)
        return [sys.executable, "-c", _FAKE[spec.name.split("_")[0]], str(out_dir)]


def fake_manifest(folder: Path, names: list[str], timeout_s: float = 30) -> Path:
    targets = "".join(f'[[targets]]\nname = "{n}"\ntarget = "clean_mlp"\n' for n in names)
    return write_manifest(folder, f'[sweep]\nname = "fake"\ntimeout_s = {timeout_s}\n{targets}')


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")


def _index(out: Path) -> dict[str, dict[str, object]]:
    data = json.loads((out / "index.json").read_text())
    return {t["name"]: t for t in data["targets"]}


def test_failures_hangs_and_crashes_are_recorded_and_the_sweep_goes_on(tmp_path: Path) -> None:
    manifest = load_manifest(fake_manifest(tmp_path, ["fail_1", "hang_1", "crash_1", "ok_1"], 2))
    out = tmp_path / "out"
    messages: list[str] = []
    results = run_sweep(
        manifest, SweepOptions(out, workers=2, command=FakeCommand()), messages.append
    )
    status = {r.name: r.status for r in results}
    assert status == {"fail_1": "failed", "hang_1": "timeout", "crash_1": "crashed", "ok_1": "ok"}
    index = _index(out)
    assert index["fail_1"]["exit_code"] == 2 and index["fail_1"]["error"] == "no weights here"
    assert index["fail_1"]["stderr_tail"] == [
        "advisor: measuring",
        "advisor: error: no weights here",
    ]
    assert "no weights here" in (out / "fail_1" / "stderr.txt").read_text()
    assert index["hang_1"]["error"] == "timed out after 2 s (process group killed)"
    assert not _alive(int((out / "hang_1" / "grandchild.pid").read_text()))
    assert index["crash_1"]["signal"] == "SIGKILL" and index["crash_1"]["exit_code"] is None
    assert index["crash_1"]["error"] == "killed by SIGKILL: going down"
    assert index["ok_1"]["report"] == "ok_1/report.json"
    assert len([m for m in messages if m.startswith("[")]) == 4
    assert "4 done (3 failed) of 4" in messages[-1] and "left" in messages[-1]


def test_resume_runs_only_what_has_no_report(tmp_path: Path) -> None:
    manifest = load_manifest(fake_manifest(tmp_path, ["ok_1", "ok_2", "fail_1"]))
    out = tmp_path / "out"
    (out / "ok_1").mkdir(parents=True)
    shutil.copy(DATA / "b" / "report.json", out / "ok_1" / "report.json")
    (out / "fail_1").mkdir()
    (out / "fail_1" / "stderr.txt").write_text("an earlier failure\n")
    with pytest.raises(AdvisorError, match="not empty; use --resume"):
        run_sweep(manifest, SweepOptions(out, command=FakeCommand()))
    command = FakeCommand()
    results = run_sweep(manifest, SweepOptions(out, resume=True, command=command))
    assert command.ran == ["ok_2", "fail_1"]
    assert [r.status for r in results] == ["ok", "ok", "failed"]
    assert "an earlier failure" not in (out / "fail_1" / "stderr.txt").read_text()
    zoo = load_zoo(out)
    assert [m.workload for m in zoo.models] == ["model_b", "model_a", None]


def test_a_stopped_sweep_leaves_a_usable_index_and_no_process(tmp_path: Path) -> None:
    manifest = load_manifest(fake_manifest(tmp_path, ["ok_1", "hang_1", "ok_2"]))
    out = tmp_path / "out"

    def stop(message: str) -> None:
        if message.startswith("[1/3]"):
            raise KeyboardInterrupt

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_sweep(manifest, SweepOptions(out, workers=2, command=FakeCommand()), stop)
    assert time.monotonic() - started < 20  # the hanging target was killed, not waited for
    assert {n: t["status"] for n, t in _index(out).items()} == {
        "ok_1": "ok",
        "hang_1": "pending",
        "ok_2": "pending",
    }
    for _ in range(50):  # the grandchild may take a moment to write its pid
        pid_file = out / "hang_1" / "grandchild.pid"
        if pid_file.exists() or not (out / "hang_1").exists():
            break
        time.sleep(0.05)
    if pid_file.exists():
        assert not _alive(int(pid_file.read_text()))
    assert not (out / "index.json.tmp").exists()


# --- aggregation and rendering on the typed fixture reports (tests/data/sweep) ---------------


def fixture_zoo_data() -> tuple[dict[str, object], dict[str, Report]]:
    index = json.loads((DATA / "index.json").read_text())
    reports = {t["name"]: load_report(DATA / t["report"]) for t in index["targets"] if t["report"]}
    return index, reports


def _at(entry: BreakEntry, file: str, line: int, gb_code: str | None = None) -> BreakEntry:
    """`entry` moved to file:line (and another registry code, if given)."""
    site = entry.site
    where = replace(site.where, file=file, line=line)
    moved = replace(site, where=where, gb_code=gb_code or site.gb_code)
    return replace(entry, site=moved)


def _default_median(report: Report, median_ms: float) -> Report:
    modes = tuple(
        replace(m, latency=replace(m.latency, median_ms=median_ms))
        if m.mode == "default" and m.latency
        else m
        for m in report.modes
    )
    return replace(report, modes=modes)


def test_display_path() -> None:
    site = "/x/lib/python3.11/site-packages/transformers/models/a/b.py"
    assert display_path(site) == "transformers/models/a/b.py"
    assert display_path("/usr/lib/python3/dist-packages/torch/nn/f.py", "/zoo") == "torch/nn/f.py"
    assert display_path("/zoo/models/a.py", "/zoo") == "models/a.py"
    assert display_path("/elsewhere/a.py", "/zoo") == "/elsewhere/a.py"
    assert display_path(None) == "?"


def test_summarise_a_report_with_nothing_judged() -> None:
    """A report without a profile (no ledger, breaks or actions) has nothing to share out."""
    _, reports = fixture_zoo_data()
    bare = replace(reports["a"], breaks=(), ledger=None, actions=(), modes=reports["a"].modes[:1])
    summary = summarise_report(bare)
    assert (summary.eager_ms, summary.default_ms, summary.speedup_default) == (10.0, None, None)
    assert summary.n_breaks == 0 and summary.breaks == () and summary.top_action is None
    assert summary.saving_share is None and summary.break_time_share is None
    assert summary.projection_basis is None and summary.library_share is None


def test_aggregation_by_hand() -> None:
    """Every expected number is worked out from the fixture's inputs (regenerate.py): mode
    medians, the ledgers' step/breaks/saving/library ms, and each break's ms and share."""
    index, reports = fixture_zoo_data()
    zoo = build_zoo(index, reports)
    a, b, c, d = zoo.models
    # a: eager 10, default 5, fullgraph 4; ledger step 5, breaks 0.75, saving 0.25, library 0.5.
    assert (a.speedup_default, a.speedup_fullgraph) == (10 / 5, 10 / 4)
    assert a.break_time_share == pytest.approx(0.75 / 5)
    assert a.saving_share == pytest.approx(0.25 / 5)  # the library break is not in the saving
    assert a.library_share == pytest.approx(0.5 / 5)
    assert (a.projected_speedup, a.projection_basis) == (pytest.approx(10 / 4.75), "estimate")
    assert a.top_action and a.top_action.action.kind == "code"
    assert a.top_action.context.entry and a.top_action.context.entry.id == "B2"
    assert [(x.gb_code, x.file, x.library) for x in a.breaks] == [
        ("GB0059", "transformers/models/x/modeling_x.py", True),  # package-relative
        ("GB0170", "models/a.py", False),  # relative to the manifest's folder, /zoo
    ]
    # b: eager 8, default 8, fullgraph failed; ledger step 8, breaks 2.56, saving 0, library 2.4.
    assert (b.speedup_default, b.speedup_fullgraph) == (8 / 8, None)
    assert b.break_time_share == pytest.approx(2.56 / 8)
    assert (b.saving_share, b.library_share) == (0.0, pytest.approx(2.4 / 8))
    assert b.top_action and b.top_action.action.kind == "upstream"
    # c: interrupted; eager 6, default 3, fullgraph 2; ledger step 3, breaks 0.6, saving 0.6,
    # projected 2.0 bounded by the measured fullgraph step.
    assert (c.speedup_default, c.speedup_fullgraph, c.incomplete) == (6 / 3, 6 / 2, True)
    assert (c.break_time_share, c.saving_share) == (pytest.approx(0.6 / 3), pytest.approx(0.2))
    assert (c.projected_speedup, c.projection_basis) == (6 / 2, "measured")
    assert (d.status, d.error) == ("timeout", "timed out after 900 s (process group killed)")
    assert zoo.counts == {"ok": 3, "timeout": 1}

    top, second, third = zoo.root_causes
    # One library line, two venvs: the same root cause (one BreakIdentity) on three models.
    assert top.identity == BreakIdentity(
        "GB0059", "transformers/models/x/modeling_x.py", 120, "print(x)"
    )
    assert (top.models, top.library, top.verdicts) == (("a", "b", "c"), True, ("isolate",))
    assert top.total_share == pytest.approx(0.10 + 0.30 + 0.20)  # each model's share
    assert top.median_share == pytest.approx(0.20)  # median of 0.10, 0.30, 0.20
    assert top.total_ms == pytest.approx(0.5 + 2.4 + 0.6)
    assert (second.identity.file, second.models, second.total_share) == (
        "models/a.py",
        ("a",),
        0.05,
    )
    assert (second.library, second.identity.source) == (False, "if x.sum() > 0:")
    assert (third.identity.file, third.total_share, third.verdicts) == (
        "transformers/utils/logging.py",
        0.02,
        ("ignore",),
    )
    gb0059, gb0170 = zoo.gb_codes
    assert (gb0059.gb_code, gb0059.locations, gb0059.models) == ("GB0059", 2, ("a", "b", "c"))
    assert gb0059.total_share == pytest.approx(0.10 + 0.30 + 0.02 + 0.20)
    assert gb0059.median_share == pytest.approx(0.20)  # per model: 0.10, 0.32, 0.20
    assert gb0059.total_ms == pytest.approx(0.5 + 2.4 + 0.16 + 0.6)
    assert (gb0170.gb_code, gb0170.total_share) == ("GB0170", 0.05)


def test_renderers_and_compare() -> None:
    index, reports = fixture_zoo_data()
    old = build_zoo(index, reports)
    assert zoo_from_json(render_json(old)) == old  # sweep.json reads back as the same records
    markdown = render_markdown(old)
    assert "`transformers/models/x/modeling_x.py:120` (GB0059, Failed to trace builtin " in markdown
    assert "costs a median 20.0% of the step on 3 models (60.0% summed)" in markdown
    assert "| d       | timeout" in markdown
    # Each top action titled from its Action and ActionContext, paths as the zoo shows them.
    assert "| Rewrite the data-dependent branch at models/a.py:30 " in markdown
    assert (
        "Needs a library change (estimated): the print() side effect at transformers/" in markdown
    )
    assert "Compile with `fullgraph=True`: it compiled, matched eager" in markdown
    assert "| 3.00x (measured) " in markdown
    page = render_html(old)
    assert page.count("data:image/png;base64,") == 2

    fixed = dict(reports)
    b = _default_median(reports["b"], 5.0)  # model b got faster...
    fixed["b"] = replace(b, breaks=b.breaks[1:])  # ...and its transformers print is gone
    c_entry = replace(reports["c"].breaks[0], cost_share=0.25)
    fixed["c"] = replace(reports["c"], breaks=(c_entry,))
    new_break = _at(reports["a"].breaks[1], "/zoo/new.py", 3, "GB0001")
    fixed["a"] = replace(reports["a"], breaks=(*reports["a"].breaks, new_break))
    new = build_zoo(index, fixed)
    cmp = compare_zoos(old, zoo_from_json(render_json(new)))
    b_change = next(m for m in cmp.models if m.name == "b")
    assert (b_change.old_speedup, b_change.new_speedup) == (8 / 8, 8 / 5)
    assert b_change.default_change == pytest.approx(5 / 8 - 1)
    assert [(c.gb_code, c.identity.file) for c in cmp.added] == [("GB0001", "new.py")]
    assert cmp.removed == ()
    (changed,) = cmp.changed
    assert (changed.old_models, changed.new_models) == (3, 2)
    assert changed.new_share == pytest.approx(0.10 + 0.25)  # a's share and c's new one
    text = render_compare_markdown(cmp)
    assert "1.00x -> 1.60x" in text and "-37.5%" in text and "60.0% -> 35.0%" in text


def test_a_moved_line_is_the_same_root_cause_in_a_comparison() -> None:
    index, reports = fixture_zoo_data()
    old = build_zoo(index, reports)
    moved = _at(reports["a"].breaks[1], "/zoo/models/a.py", 34)  # code added above it
    new = build_zoo(
        index, {**reports, "a": replace(reports["a"], breaks=(reports["a"].breaks[0], moved))}
    )
    cmp = compare_zoos(old, new)
    assert cmp.added == () and cmp.removed == () and cmp.changed == ()


def test_an_unreadable_report_is_missing_with_the_loaders_reason(tmp_path: Path) -> None:
    folder = tmp_path / "sweep"
    shutil.copytree(DATA, folder)
    old = json.loads((folder / "c" / "report.json").read_text())
    (folder / "c" / "report.json").write_text(json.dumps({**old, "schema_version": 2}))
    (folder / "b" / "report.json").write_text("{not json")
    a, b, c, _ = load_zoo(folder).models
    assert a.status == "ok"
    assert (b.status, c.status) == ("missing", "missing")
    assert b.error and "not valid JSON" in b.error and "\n" not in b.error
    assert c.error and "report schema version 2 is not supported" in c.error


def test_cli_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "sweep"
    shutil.copytree(DATA, folder)
    assert main(["sweep", "--compare", str(folder), str(folder), "--out", str(tmp_path / "c")]) == 0
    assert "## Root causes removed\n\nNone." in capsys.readouterr().out
    assert json.loads((tmp_path / "c" / "compare.json").read_text())["removed"] == []


def test_cli_compare_of_an_old_sweep_json_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "sweep.json"
    old.write_text(json.dumps({"name": "old", "models": [], "sweep_schema": 1}))
    assert main(["sweep", "--compare", str(old), str(DATA)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"advisor: error: {old}: sweep schema version 1 is not supported: ")
    assert "this advisor reads version 2" in line


# --- re-judging a saved sweep ----------------------------------------------------------------


def _saved_sweep(tmp_path: Path) -> Path:
    """The fixture sweep: a and b with measurements.json, c without, d timed out."""
    saved = tmp_path / "saved"
    shutil.copytree(DATA, saved)
    return saved


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _verdicts(folder: Path, target: str) -> list[str]:
    return [b.verdict for b in load_report(folder / target).breaks]


def test_rejudge_writes_a_new_folder_and_leaves_the_saved_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = _saved_sweep(tmp_path)
    before = _snapshot(saved)
    out, stricter = tmp_path / "new", tmp_path / "stricter"
    assert main(["sweep", "--rejudge", str(saved), "--out", str(out)]) == 0
    summary = capsys.readouterr().err.strip().splitlines()[-1]
    assert summary.startswith("advisor sweep: re-judged 2 of 2 target(s) with measurements ")
    assert "(2 without) in " in summary and f"written to {out}/" in summary
    report_files = ["measurements.json", "report.html", "report.json", "report.md", "trace.json"]
    for target in ("a", "b"):
        assert sorted(p.name for p in (out / target).iterdir()) == report_files
    assert sorted(p.name for p in out.iterdir()) == [
        "a", "b", "index.json", "sweep.html", "sweep.json", "sweep.md"
    ]  # fmt: skip
    index = {t["name"]: t for t in json.loads((out / "index.json").read_text())["targets"]}
    assert [index[n]["report"] for n in "abcd"] == ["a/report.json", "b/report.json", None, None]
    assert (index["c"]["error"], index["d"]["status"]) == (NO_MEASUREMENTS, "timeout")

    zoo = zoo_from_json((out / "sweep.json").read_text())
    a, b, c, d = zoo.models
    # Judged from the measurements (the print case, default median 0.105 ms), not copied.
    assert (a.status, a.step_ms, b.step_ms) == ("ok", 0.105, 0.105)
    assert (c.status, c.error, d.status) == ("missing", NO_MEASUREMENTS, "timeout")
    assert _verdicts(out, "a") != ["ignore"]

    args = ["sweep", "--rejudge", str(saved), "--out", str(stricter), "--ignore-share", "0.9"]
    assert main(args) == 0
    assert _verdicts(stricter, "a") == ["ignore"]  # judged again with the other threshold
    capsys.readouterr()

    written = _snapshot(out)
    assert main(["sweep", "--rejudge", str(saved), "--out", str(out)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == f"advisor: error: {out} already exists and is not empty; choose another --out"
    assert _snapshot(out) == written
    assert main(["sweep", "--rejudge", str(saved), "--out", str(saved / "inside")]) == 2
    assert _snapshot(saved) == before  # byte-identical, and nothing added


def test_rejudge_runs_where_torch_cannot_be_imported(tmp_path: Path) -> None:
    """In two worker processes, into the default folder beside the saved one."""
    saved = _saved_sweep(tmp_path)
    proc = run_without_torch(
        "from advisor.cli import main\n"
        f"sys.exit(main(['sweep', '--rejudge', {str(saved)!r}, '--workers', '2']))\n"
    )
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stderr.splitlines()  # the summary alone: nothing tried to import torch
    assert "re-judged 2 of 2 target(s) with measurements (2 without)" in line
    (made,) = [p for p in tmp_path.iterdir() if p.name != "saved"]
    assert made.name.startswith("saved-rejudged-")
    assert load_report(made / "b").ledger is not None
    assert (made / "sweep.html").is_file()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["zoo.toml", "--rejudge", "x"], "not a MANIFEST and --rejudge"),
        (["--compare", "a", "b", "--rejudge", "x"], "not --compare and --rejudge"),
        (["zoo.toml", "--ignore-share", "0.5"], "--ignore-share needs --rejudge FOLDER"),
        (["--rejudge", "nowhere"], "nowhere is not a sweep folder (no index.json)"),
    ],
)
def test_rejudge_arguments(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sweep", *args]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("advisor: error: ") and message in line


# --- real sweeps: one per engine, plus real targets that fail, hang and crash ----------------


def _real_manifest(folder: Path, extra: str = "") -> Path:
    return write_manifest(
        folder,
        f"""\
        [sweep]
        name = "tiny-zoo"
        timeout_s = 300

        [defaults]
        device = "cpu"

        [[targets]]
        name = "tiny"
        target = "{TINY}:factory"
        {FAST_RUN}
        {extra}
        """,
    )


def _check_zoo_folder(out: Path) -> dict[str, object]:
    for name in ("index.json", "sweep.json", "sweep.md", "sweep.html", "tiny/report.json"):
        assert (out / name).is_file(), name
    assert "data:image/png;base64," in (out / "sweep.html").read_text()
    zoo = json.loads((out / "sweep.json").read_text())
    tiny = zoo["models"][0]
    assert tiny["status"] == "ok" and tiny["speedup_default"] > 0 and tiny["n_breaks"] == 1
    assert zoo["root_causes"][0]["gb_code"] == "GB0059"
    return zoo


@pytest.mark.inductor
def test_real_sweep_local_engine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sized = f'[[targets]]\nname = "sized"\ntarget = "{GOOD}:sized"\nparams = {{ size = 3 }}\n'
    manifest = _real_manifest(tmp_path, sized + FAST_RUN)
    out = tmp_path / "out"
    assert main(["sweep", str(manifest), "--out", str(out), "--workers", "2"]) == 0
    zoo = _check_zoo_folder(out)
    assert [m["name"] for m in zoo["models"]] == ["tiny", "sized"]
    sized_report = json.loads((out / "sized" / "report.json").read_text())
    assert sized_report["workload"]["name"] == "good.sized"
    assert "[2/2]" in capsys.readouterr().err


@pytest.mark.inductor
def test_real_sweep_ray_engine(tmp_path: Path) -> None:
    import ray

    broken = f'[[targets]]\nname = "broken"\ntarget = "{GOOD}:raises"\n'
    manifest = load_manifest(_real_manifest(tmp_path, broken))
    out = tmp_path / "out"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        results = run_sweep(manifest, SweepOptions(out, engine="ray"))
        assert ray.is_initialized()  # a Ray the caller started is left to the caller
    finally:
        ray.shutdown()
    assert [r.status for r in results] == ["ok", "failed"]
    assert results[1].error and "raised RuntimeError: no weights here" in results[1].error
    assert main(["sweep", str(manifest.path), "--out", str(out), "--resume"]) == 1  # broken again
    zoo = _check_zoo_folder(out)
    assert zoo["models"][1]["status"] == "failed"


def test_real_targets_that_hang_and_crash(tmp_path: Path) -> None:
    manifest = write_manifest(
        tmp_path,
        f"""\
        [[targets]]
        name = "sleeps"
        target = "{MISBEHAVING}:sleeps"

        [[targets]]
        name = "crashes"
        target = "{MISBEHAVING}:crashes"
        """,
    )
    out = tmp_path / "out"
    assert (
        # the crashing run starts a profile process and a wave of arm workers before it fails:
        # seconds each on a loaded 2-core machine, so the timeout leaves room for them
        main(["sweep", str(manifest), "--out", str(out), "--timeout", "20", "--workers", "2"]) == 1
    )
    index = _index(out)
    assert index["sleeps"]["status"] == "timeout"
    # the target crashes in the run's worker processes, so the run itself survives it and
    # fails with the crash as its one-line error (eager failed in a process of its own)
    crashed = index["crashes"]
    assert crashed["status"] == "failed" and "killed by signal 6" in crashed["error"]
    summary = (out / "sweep.md").read_text()
    assert "2 targets: 1 failed, 1 timeout" in summary and "timed out after 20 s" in summary


def test_engine_ray_without_ray_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    manifest = fake_manifest(tmp_path, ["ok_1"])
    assert main(["sweep", str(manifest), "--engine", "ray", "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.startswith("advisor: error: --engine ray needs Ray")
    assert not (tmp_path / "o").exists()


def test_zoo_report_modules_do_not_import_torch() -> None:
    code = (
        "import sys, advisor.sweep.aggregate, advisor.sweep.compare, advisor.sweep.render, "
        "advisor.sweep.runner, advisor.sweep.folder, advisor.sweep.rejudge; "
        "print('torch' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "False"


def test_user_code_beside_the_manifest_folder_is_shown_relative() -> None:
    """A scenario outside the zoo's folder shows relative to the folder holding both."""
    index, reports = fixture_zoo_data()
    index = {**index, "manifest_folder": "/repo/zoo"}
    first, second = reports["a"].breaks
    breaks = (_at(second, "/repo/zoo/models/a.py", 30), _at(first, "/repo/scenarios/s.py", 9))
    zoo = build_zoo(index, {**reports, "a": replace(reports["a"], breaks=breaks)})
    files = {c.identity.file for c in zoo.root_causes}
    assert {"zoo/models/a.py", "scenarios/s.py"} <= files
    assert not any(f.startswith("/repo") for f in files)
    assert zoo.display("/repo/scenarios/s.py") == "scenarios/s.py"
