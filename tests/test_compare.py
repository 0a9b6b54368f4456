from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from advisor.cli import main
from advisor.compare import compare_reports
from advisor.model import BreakEntry, LatencyStats, Location, ModeResult, report_to_json
from advisor.render.compare import render_compare_markdown, render_compare_text
from advisor.stats import latency_stats, mann_whitney_p
from tests.support.reports import full_report, print_entry


def with_samples(samples_ms: list[float], breaks: tuple[BreakEntry, ...] = ()):  # type: ignore[no-untyped-def]
    base = full_report()
    lat: LatencyStats = latency_stats([s / 1e3 for s in samples_ms], 1)
    modes = (ModeResult("eager", "ok", latency=lat), ModeResult("default", "ok", latency=lat))
    return dataclasses.replace(base, modes=modes, breaks=breaks)


def test_mann_whitney_is_exact_for_small_samples() -> None:
    # fully separated 5 vs 5: U = 0, and 2 of the C(10, 5) = 252 orderings are as extreme
    p = mann_whitney_p(list(np.arange(5.0)), list(np.arange(5.0) + 10))
    assert p == pytest.approx(2 / 252)
    assert mann_whitney_p([1.0] * 6, [1.0] * 6) == 1.0


def test_clear_speedup_is_significant_and_noise_is_not() -> None:
    rng = np.random.default_rng(3)
    before = with_samples(list(1.0 + rng.normal(0, 0.02, 20)))
    faster = with_samples(list(0.8 + rng.normal(0, 0.02, 20)))
    same = with_samples(list(1.0 + rng.normal(0, 0.02, 20)))
    c = compare_reports(before, faster)
    d = next(m for m in c.modes if m.mode == "default")
    assert d.verdict == "faster" and d.significant
    assert d.ratio == pytest.approx(0.8, abs=0.03)
    assert d.ci_high is not None and d.ci_high < 1.0
    c2 = compare_reports(before, same)
    d2 = next(m for m in c2.modes if m.mode == "default")
    assert d2.verdict == "no significant change"
    assert d2.ci_low is not None and d2.ci_low < 1.0 < (d2.ci_high or 0)


def test_breaks_removed_added_kept() -> None:
    b1 = print_entry()

    def moved(entry_id: str, code: str, line: int) -> BreakEntry:
        site = dataclasses.replace(b1.site, id=entry_id, gb_code=code, where=Location("m.py", line))
        return dataclasses.replace(b1, id=entry_id, site=site)

    b2, b3 = moved("B2", "GB0170", 12), moved("B3", "GB0124", 20)
    c = compare_reports(with_samples([1.0] * 8, (b1, b2)), with_samples([1.0] * 8, (b2, b3)))
    status = {b.gb_code: b.status for b in c.breaks}
    assert status == {"GB0059": "removed", "GB0170": "kept", "GB0124": "added"}
    text = render_compare_text(c)
    assert "removed" in text and "GB0124" in text
    assert render_compare_markdown(c).startswith("# advisor comparison")


def test_compare_cli_writes_without_overwriting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = tmp_path / "before.json"
    after = tmp_path / "after.json"
    before.write_text(report_to_json(with_samples([1.0, 1.1, 0.9, 1.0, 1.05, 0.95, 1.0, 1.0])))
    after.write_text(report_to_json(with_samples([0.5, 0.55, 0.45, 0.5, 0.52, 0.48, 0.5, 0.5])))
    out = tmp_path / "cmp"
    assert main(["compare", str(before), str(after), "--out", str(out)]) == 0
    data = json.loads((out / "compare.json").read_text())
    assert data["modes"][1]["verdict"] == "faster"
    assert main(["compare", str(before), str(after), "--out", str(out)]) == 2
    assert "never overwritten" in capsys.readouterr().err
