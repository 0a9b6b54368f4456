"""The replicated A/B reference script (benchmarks/reference_ab.py): its report's shape, one
fresh process per variant and round in the rotated order, failures reported with the child's
message, and the t-table it falls back on. The workloads are tiny torch-free eager functions
(tests/targets/reference_ab_targets.py), so each child starts and ends in well under a second.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import reference_ab
from tests.targets.reference_ab_targets import LOG_ENV

TARGETS = Path(__file__).resolve().parent / "targets" / "reference_ab_targets.py"
KEYS = {
    "host", "torch", "device", "rounds", "threads", "seconds", "order", "baseline", "variants",
    "savings", "failed", "params",
}  # fmt: skip


@pytest.fixture
def child_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "children.log"
    monkeypatch.setenv(LOG_ENV, str(path))  # the children inherit the environment
    return path


def test_measure_shape_rotation_and_failure(child_log: Path) -> None:
    variants = {
        "slow": f"{TARGETS}:slow",  # the file form
        "fast": "tests.targets.reference_ab_targets:fast",  # the module form
        "broken": f"{TARGETS}:broken@eager",  # a per-variant mode
    }
    data = reference_ab.measure(variants, rounds=2, threads=1, seconds=0.05, mode="eager")
    assert set(data) == KEYS
    assert (data["rounds"], data["threads"], data["baseline"]) == (2, 1, "slow")
    order = [["slow", "fast", "broken"], ["fast", "broken", "slow"]]
    assert data["order"] == order
    # what the children themselves saw: this order, each in a process of its own
    ran = [line.split() for line in child_log.read_text().splitlines()]
    assert [label for label, _ in ran] == [name for names in order for name in names]
    assert len({pid for _, pid in ran}) == len(ran)

    for name in ("slow", "fast"):
        v = data["variants"][name]
        assert v["mode"] == "eager" and v["failed_rounds"] == []
        assert len(v["round_ms"]) == 2 and all(ms > 0 for ms in v["round_ms"])
        assert v["min_ms"] <= v["median_ms"] <= v["max_ms"]
        assert all(len(blocks) >= reference_ab.MIN_BLOCKS for blocks in v["blocks_ms"])
        assert all(s > 0 for s in v["first_call_s"])

    broken = data["variants"]["broken"]
    assert broken["round_ms"] == [None, None] and broken["median_ms"] is None
    assert [f["round"] for f in broken["failed_rounds"]] == [0, 1]
    assert all(
        f["error"] == "RuntimeError: no weights for this variant" for f in broken["failed_rounds"]
    )
    assert data["failed"] == ["broken"]

    assert set(data["savings"]) == {"fast", "broken"}
    # `slow` does about a thousand times the work of `fast`: a saving in every round
    fast = data["savings"]["fast"]
    assert fast["baseline"] == "slow" and fast["paired_rounds"] == 2
    assert all(ms > 0 for ms in fast["per_round_ms"])
    assert all(0 < share <= 1 for share in fast["per_round_share"])
    low, high = fast["ci95_ms"]
    assert low <= fast["mean_ms"] <= high
    assert data["savings"]["broken"]["paired_rounds"] == 0
    assert data["savings"]["broken"]["mean_ms"] is None
    json.dumps(data)  # the report is plain JSON


def test_cli_writes_json_and_fails_when_a_variant_never_ran(
    child_log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ab.json"
    argv = ["--variant", f"ok={TARGETS}:fast", "--variant", f"bad={TARGETS}:broken"]
    argv += ["--rounds", "1", "--seconds", "0.05", "--mode", "eager", "--out", str(out)]
    assert reference_ab.main(argv) == 1
    data = json.loads(out.read_text())
    assert data["failed"] == ["bad"] and data["variants"]["ok"]["median_ms"] > 0
    assert "no weights for this variant" in capsys.readouterr().out


def test_parse_variant() -> None:
    parse = reference_ab.parse_variant
    assert parse("a", "pkg.mod:make", "default") == reference_ab.Variant(
        "a", "pkg.mod:make", "default"
    )
    assert parse("b", "d/x.py:make@fullgraph", "default").mode == "fullgraph"
    assert parse("c", "d/x.py:make@eager", "default").target == "d/x.py:make"
    with pytest.raises(ValueError, match="mode"):
        parse("d", "pkg.mod:make@fast", "default")
    with pytest.raises(ValueError, match="expected"):
        parse("e", "pkg.mod", "default")
    knob = parse("f", "d/x.py:make@default+capture_scalar_outputs=true+inductor.x=a", "eager")
    assert knob.mode == "default"
    assert knob.config == (("capture_scalar_outputs", True), ("inductor.x", "a"))
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse("g", "pkg.mod:make@default+flag", "default")


def test_a_variant_compiles_under_its_settings_in_its_own_process() -> None:
    import torch._dynamo.config as dynamo_config

    before = dynamo_config.capture_scalar_outputs
    try:
        reference_ab.apply_config([("capture_scalar_outputs", not before)])
        assert dynamo_config.capture_scalar_outputs is (not before)
        with pytest.raises(ValueError, match="unknown compiler setting"):
            reference_ab.apply_config([("no_such_setting_here", 1)])
    finally:
        dynamo_config.capture_scalar_outputs = before


def test_t_table_matches_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    for df, value in enumerate(reference_ab.T_975, start=1):
        assert value == pytest.approx(stats.t.ppf(0.975, df), abs=1e-3), df


def test_a_failed_child_is_named_by_its_exception_not_torchs_hint_lines() -> None:
    from benchmarks.reference_ab import child_error

    stderr = (
        "W1205 warning before\n"
        "Traceback (most recent call last):\n"
        '  File "x.py", line 3, in <module>\n'
        "    step()\n"
        "torch._dynamo.exc.Unsupported: Data-dependent branching\n"
        "  Explanation: the branch depends on a tensor value\n"
        "\n"
        "Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace\n"
    )
    assert child_error(stderr, 1) == "torch._dynamo.exc.Unsupported: Data-dependent branching"
    assert child_error("killed by the OOM killer\n", 137) == "killed by the OOM killer"
    assert child_error("", 1) == "exit status 1, no result"
