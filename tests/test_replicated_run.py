"""`advisor run` with the replicated protocol, end to end on a tiny target with a print break:
every arm in fresh worker processes of its own, the numbers of each resting on processes x
rounds, the what-ifs paired with the default arm wave by wave."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.test_cli import inductor_cache_dir, run_cli


@pytest.mark.inductor
def test_every_arm_is_replicated_in_processes_of_its_own(tmp_path: Path) -> None:
    out = tmp_path / "run"
    own_claims = {"TMPDIR": str(tmp_path), "TORCHINDUCTOR_CACHE_DIR": inductor_cache_dir()}
    proc = run_cli(
        "run",
        "tests/targets/tiny.py:factory",
        "--out",
        str(out),
        "--processes",
        "2",
        "--repeats",
        "5",
        # plumbing, not timing: exactly --repeats rounds a wave (the rounds past them, until a
        # process's median settles, are test_wave_rounds.py's; here they took 65 s against 33)
        "--target-ci",
        "0",
        "--threads",
        "1",
        "--profile-calls",
        "5",
        env={**own_claims, "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "wave 2 of 2" in proc.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["settings"]["protocol"] == "replicated"
    modes = {m["mode"]: m for m in report["modes"]}
    for name in ("eager", "default"):
        rep = modes[name]["latency"]["replication"]
        # a third wave where some arm's processes disagreed (the default joins it: the
        # baseline every arm is paired with)
        waves = rep["processes"]
        assert waves in (2, 3) and rep["rounds"] >= 5
        assert rep["waves"] == list(range(waves)) and len(rep["first_call_s"]) == waves
        # the machine's reference was timed in every wave the arm was (re-measured ones too)
        assert len(rep["machine_ms"]) == waves and min(rep["machine_ms"]) > 0
        # peak memory from the first process, taken after its last block
        assert modes[name]["peak_memory_bytes"] > 0
        low, high = modes[name]["latency"]["ci_ms"]
        assert low <= modes[name]["latency"]["median_ms"] <= high
    assert modes["fullgraph"]["status"] == "failed"  # the print breaks the graph
    measured = [w for w in report["what_ifs"] if w["status"] == "measured"]
    assert measured, report["what_ifs"]
    for w in measured:
        waves = w["replication"]["processes"]
        assert waves == (3 if w["replication"]["remeasured"] else 2)
        assert len(w["process_savings_ms"]) == waves
        assert w["interleaved"] is True
    # the blocks column: processes x rounds (3 processes where a wave was re-measured)
    assert re.search(r"\b[23]x\d+\b", proc.stdout), proc.stdout
    assert "quick protocol" not in proc.stdout
    markdown = (out / "report.md").read_text()
    assert "harness: replicated: every arm (mode, what-if) in 2 fresh worker processes" in markdown
    assert "the machine's own speed (a fixed reference workload timed in every wave)" in markdown
