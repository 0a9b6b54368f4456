"""Fuzzing (hypothesis) of what users and other tools hand the advisor: target strings and
target files, saved reports (truncated, wrong types, unknown schema versions) and the reports
`compare` reads. Bad input must be an AdvisorError (a one-line error), never another
exception."""

from __future__ import annotations

import itertools
import json
import math
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from advisor import runner
from advisor.cli import main
from advisor.core.errors import AdvisorError
from advisor.core.model import (
    SCHEMA_VERSION,
    BreakEntry,
    BreakSite,
    LatencyStats,
    Location,
    ModeResult,
    Report,
    report_from_json,
)
from advisor.gate import compare
from advisor.measure.workload import Workload, load_target, scenario_names
from advisor.render.compare import render_compare_markdown, render_compare_text
from advisor.render.json_report import render_json
from tests.support.reports import full_report

FAST = settings(
    max_examples=int(os.environ.get("ADVISOR_FUZZ_EXAMPLES", "60")),
    deadline=None,
    database=None,  # no example database left in the working tree
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
PIECES = ["", "a", "x.py", "m", "dir/", "/", "\\", ":", "::", ".", "..", " ", "-", "f", "1"]
PIECES += ["\x00", "é", "\n", "clean", "_", "*", "~", "$HOME", "C:", "workload", ".py:"]
target_strings = st.one_of(
    st.text(max_size=40), st.lists(st.sampled_from(PIECES), max_size=8).map("".join)
)
IMPORT_FAILURES = [
    ModuleNotFoundError("No module named 'x'"),
    ImportError("cannot import name 'y'"),
    SyntaxError("invalid syntax"),
    RuntimeError("import-time failure"),
    SystemExit(3),
]


@pytest.fixture
def empty_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Targets are resolved in an empty folder, and no module can really be imported: a
    generated `module:factory` must not run real code (`os:system`)."""
    monkeypatch.chdir(tmp_path)
    yield tmp_path


@FAST
@given(target=target_strings, failure=st.sampled_from(IMPORT_FAILURES))
def test_any_target_string_is_an_advisor_error(
    empty_cwd: Path, target: str, failure: BaseException
) -> None:
    # a built-in scenario's name is a target that loads (Hypothesis draws string constants
    # from the code under test, so it finds them: 'train_mask' did)
    assume(target not in scenario_names())
    with mock.patch("advisor.measure.workload.importlib.import_module", side_effect=failure):
        with pytest.raises(AdvisorError):
            load_target(target, "cpu")


@FAST
@given(target=target_strings)
def test_any_run_target_prints_one_error_line(
    empty_cwd: Path, target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assume(target not in scenario_names())  # a built-in scenario's name loads (see above)
    failure = ModuleNotFoundError("No module named 'x'")
    with (
        mock.patch("advisor.measure.workload.importlib.import_module", side_effect=failure),
        mock.patch.object(runner, "run", side_effect=AssertionError("must not measure")),
    ):
        code = main(["run", "--", target] if target.startswith("-") else ["run", target])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("advisor: error: "), err


# each body, and whether it makes a workload (True) or an AdvisorError (False)
MODULE_BODIES = {
    "def factory(device): return print, ()": True,
    "def factory(): return print, [1]": True,
    "def factory(device): return 1": False,
    "def factory(device): return (1, 2)": False,
    "def factory(device): return lambda: 1": False,
    "def factory(device): raise ValueError('no\\nweights')": False,
    "def factory(*, size): return print, ()": False,
    "def factory(device, **kw): raise SystemExit(4)": False,
    "factory = 3": False,
    "import advisor_no_such_module_xyz": False,
    "raise SystemExit(3)": False,
    "raise KeyError('k')": False,
    "def factory(device):\n  return Workload": False,
    "from advisor import Workload\ndef factory(device): return Workload(3)": False,
    "from advisor import Workload\ndef factory(device): return Workload(print, (1,))": True,
}
_file_numbers = itertools.count()
Loader = Callable[[str, str], Workload]


def target_file_problem(load: Loader, folder: Path, body: str, loads: bool | None) -> str | None:
    """What is wrong with how `load` treats a target file holding `body` (None: nothing).
    `loads` says whether the body makes a workload; None when any clean outcome is right."""
    path = folder / f"fuzz_target_{next(_file_numbers)}.py"
    path.write_text(body, encoding="utf-8", errors="surrogatepass")
    before = set(sys.modules)
    try:
        workload = load(f"{path}:factory", "cpu")
    except AdvisorError as exc:
        if not str(exc) or "\n" in str(exc):
            return f"an error that is not one line: {str(exc)!r}"
        return f"a good target refused: {exc}" if loads else None
    finally:
        for name in set(sys.modules) - before:
            del sys.modules[name]
    if loads is False:
        return "a bad target loaded"
    if not (isinstance(workload, Workload) and callable(workload.fn)):
        return f"loaded as {type(workload).__name__}, not a workload"
    return None


@pytest.mark.parametrize("body", sorted(MODULE_BODIES))
def test_each_known_target_file_loads_or_is_refused_as_expected(empty_cwd: Path, body: str) -> None:
    assert target_file_problem(load_target, empty_cwd, body, MODULE_BODIES[body]) is None


def _refuse_everything(target: str, device: str) -> Workload:
    raise AdvisorError("no")


def _load_multiline(target: str, device: str) -> Workload:
    try:
        return load_target(target, device)
    except AdvisorError as exc:
        raise AdvisorError(f"{exc}\n(planted)") from None


@pytest.mark.parametrize("planted", [_refuse_everything, _load_multiline])
def test_the_target_file_check_fails_on_a_planted_loader(empty_cwd: Path, planted: Loader) -> None:
    problems = [
        target_file_problem(planted, empty_cwd, body, loads)
        for body, loads in MODULE_BODIES.items()
    ]
    assert any(problems)


@FAST
@given(body=st.text(max_size=60))
def test_any_target_file_loads_or_is_an_advisor_error(empty_cwd: Path, body: str) -> None:
    assert target_file_problem(load_target, empty_cwd, body, MODULE_BODIES.get(body)) is None


# --- saved reports ------------------------------------------------------------------------------

REPORT_TEXT = render_json(full_report())
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


REPORT_PATHS = [p for p in _paths(json.loads(REPORT_TEXT)) if p and p[0] != "schema_version"]


def _set(data: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        data = data[key]
    data[path[-1]] = value


ReportReader = Callable[[str], Report]


def truncated_report_problem(read: ReportReader, cut: int) -> str | None:
    """What is wrong with how `read` takes the report cut after `cut` characters: only the
    whole text is a report, every shorter one a clear error."""
    text = REPORT_TEXT[:cut]
    whole = text.strip() == REPORT_TEXT.strip()
    try:
        report = read(text)
    except ValueError as exc:
        if whole:
            return f"the whole report refused: {exc}"
        clear = str(exc).startswith(("not valid JSON", "not an advisor report", "malformed report"))
        return None if clear else f"an unclear error: {exc}"
    if not whole:
        return f"a report cut at {cut} of {len(REPORT_TEXT)} loaded"
    return None if report == full_report() else "the whole report read back changed"


@FAST
@given(cut=st.integers(min_value=0, max_value=len(REPORT_TEXT)))
def test_a_truncated_report_is_a_clear_error(cut: int) -> None:
    assert truncated_report_problem(report_from_json, cut) is None


def test_the_whole_report_reads_back_equal() -> None:
    assert truncated_report_problem(report_from_json, len(REPORT_TEXT)) is None


def _read_leniently(text: str) -> Report:
    try:
        return report_from_json(text)
    except ValueError:
        return full_report()


def _refuse_every_report(text: str) -> Report:
    raise ValueError("not valid JSON")


@pytest.mark.parametrize("planted", [_read_leniently, _refuse_every_report])
def test_the_truncation_check_fails_on_a_planted_reader(planted: ReportReader) -> None:
    cuts = (0, len(REPORT_TEXT) // 2, len(REPORT_TEXT))
    assert any(truncated_report_problem(planted, cut) for cut in cuts)


@FAST
@given(path=st.sampled_from(REPORT_PATHS), value=json_values)
def test_a_report_with_a_wrong_value_loads_or_is_a_clear_error(
    path: tuple[Any, ...], value: Any
) -> None:
    data = json.loads(REPORT_TEXT)
    _set(data, path, value)
    try:
        report = report_from_json(json.dumps(data))
    except ValueError as exc:
        assert str(exc).startswith("malformed report: ")
    else:
        assert isinstance(report, Report)


# a typed field, and a value of the wrong type for it
WRONG_TYPES = [
    (("modes", 0, "latency", "median_ms"), "fast"),
    (("modes", 0, "mode"), 3),
    (("breaks",), {"a": 1}),
]


@pytest.mark.parametrize(("path", "value"), WRONG_TYPES)
def test_a_wrong_type_in_a_typed_field_is_malformed(path: tuple[Any, ...], value: Any) -> None:
    assert path in REPORT_PATHS
    data = json.loads(REPORT_TEXT)
    _set(data, path, value)
    with pytest.raises(ValueError, match=r"^malformed report: "):
        report_from_json(json.dumps(data))


@pytest.mark.parametrize("path", [p for p, _ in WRONG_TYPES])
def test_a_field_given_its_own_value_back_reads_equal(path: tuple[Any, ...]) -> None:
    data = json.loads(REPORT_TEXT)
    original = data
    for key in path:
        original = original[key]
    _set(data, path, original)
    assert report_from_json(json.dumps(data)) == full_report()


@FAST
@given(version=json_values)
def test_an_unknown_schema_version_is_named(version: Any) -> None:
    assume(not (isinstance(version, (int, float)) and version == SCHEMA_VERSION))
    data = json.loads(REPORT_TEXT)
    data["schema_version"] = version
    with pytest.raises(ValueError, match="is not supported") as caught:
        report_from_json(json.dumps(data))
    assert f"report schema version {version!r}" in str(caught.value)
    assert f"this advisor reads version {SCHEMA_VERSION}" in str(caught.value)


# --- compare's inputs ----------------------------------------------------------------------------

samples = st.lists(
    st.floats(min_value=0.0, max_value=1e6, allow_nan=False, allow_infinity=False), max_size=25
)


def latency(values: list[float]) -> LatencyStats | None:
    if not values:
        return None
    ordered = sorted(values)
    return LatencyStats(ordered[len(ordered) // 2], 0.0, len(values), tuple(values))


@st.composite
def reports(draw: st.DrawFn) -> Report:
    base = full_report()
    modes = tuple(
        ModeResult(mode, draw(st.sampled_from(["ok", "failed"])), latency=latency(draw(samples)))
        for mode in draw(st.sets(st.sampled_from(["eager", "default", "fullgraph"])))
    )
    sites = [
        BreakSite(f"B{i}", code, "t", Location(file, line))
        for i, (code, file, line) in enumerate(
            draw(
                st.lists(
                    st.tuples(
                        st.sampled_from(["GB0059", None]),
                        st.sampled_from(["/a/m.py", "m.py", "", "<string>"]),
                        st.integers(min_value=0, max_value=3),
                    ),
                    max_size=4,
                )
            )
        )
    ]
    breaks = tuple(BreakEntry(s.id, s, cost_ms=draw(st.floats(0, 10))) for s in sites)
    return replace(base, modes=modes, breaks=breaks, sites=tuple(sites))


@FAST
@given(before=reports(), after=reports())
def test_compare_takes_any_pair_of_reports(before: Report, after: Report) -> None:
    result = compare.compare_reports(before, after)
    for delta in result.modes:
        assert delta.verdict in ("faster", "slower", "no significant change", "n/a")
        if delta.significant:
            # a mode against eager in its own run is judged on its interval alone (no p)
            if not delta.mode.endswith(compare.RELATIVE_SUFFIX):
                assert delta.p_value is not None and delta.p_value < result.alpha
            assert delta.ci_low is not None and delta.ci_high is not None
            assert math.isfinite(delta.ci_low) and math.isfinite(delta.ci_high)
            assert delta.ci_high < 1.0 or delta.ci_low > 1.0
        if delta.ratio is not None:
            assert math.isfinite(delta.ratio)
    assert {d.status for d in result.breaks} <= {"kept", "removed", "added"}
    render_compare_text(result)
    render_compare_markdown(result)
