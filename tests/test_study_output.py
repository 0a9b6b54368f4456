"""A study's outputs: its JSON and Markdown side by side, each replaced whole on a rerun."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.study_output import write_study


def test_a_study_writes_its_json_and_markdown_and_replaces_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "reports" / "study"
    write_study(out, "study", {"rows": [1, 2]}, "# first\n")
    write_study(out, "study", {"rows": [3]}, "# second\n")
    assert json.loads((out / "study.json").read_text()) == {"rows": [3]}
    assert (out / "study.md").read_text() == "# second\n"
    assert sorted(p.name for p in out.iterdir()) == ["study.json", "study.md"]
    assert capsys.readouterr().out.endswith("# second\n\n")
