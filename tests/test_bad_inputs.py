"""docs/bad-inputs.md stays true: every row's command prints exactly the row's line (with `…`
matching anything) and exits 2."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from advisor.cli import main

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "docs" / "bad-inputs.md"
RENDER_FAILURES = "## When judging or rendering fails"
ROW = re.compile(r"^\| (?P<what>[^|]+?) \| `(?P<command>[^`]+)` \| `(?P<line>[^`]+)` \|$")


def rows() -> list[tuple[str, str, str]]:
    text = TABLE.read_text(encoding="utf-8")
    # the render-failure row exits 1 and runs in tests/test_render_failure.py
    text = text.split(RENDER_FAILURES)[0]
    found = [ROW.match(line) for line in text.splitlines()]
    return [(m["what"], m["command"], m["line"]) for m in found if m]


def test_the_table_is_read() -> None:
    assert len(rows()) >= 30


@pytest.mark.parametrize(("what", "command", "line"), rows(), ids=[r[0] for r in rows()])
def test_each_bad_input_prints_its_line(
    what: str,
    command: str,
    line: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if "--device cuda" in command:
        import torch

        if torch.cuda.is_available():
            pytest.skip("a GPU is present")
    monkeypatch.chdir(ROOT)
    argv = shlex.split(command)
    assert argv[0] == "advisor"
    code = main(argv[1:])
    printed = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    pattern = ".*".join(re.escape(part) for part in line.split("…"))
    assert printed and re.fullmatch(pattern, printed[-1]), printed[-1:]
    assert not any(p.startswith("Traceback") for p in printed)
