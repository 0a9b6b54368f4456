"""No patch ever touches a file outside the target's own code: over every root cause of the
committed zoo summaries (library, training and transformers zoos: third-party models and the
user code around them), a break in an installed package, the standard library or torch gets no
patch, and a patch for a break in the user's code edits that file only, inside the function
that holds the break. Torch-free: the rewrite engine reads source text."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from advisor.core.model import Patch
from advisor.core.paths import is_installed
from advisor.measure.rewrite import Refusal, patch_for

ROOT = Path(__file__).resolve().parents[1]
ZOOS = ("library-zoo", "training-zoo", "transformers-zoo")


def _resolved(file: str, base: Path) -> Path | None:
    """A summary's display path as a file on this machine: the user's code below the zoo's
    folder or the repository, installed code below its package's folder."""
    for candidate in (base / file, ROOT / file):
        if candidate.is_file():
            return candidate
    top = file.split("/", 1)[0].removesuffix(".py")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    origin = Path(spec.origin)
    installed = origin.parent.parent / file if origin.name == "__init__.py" else origin
    return installed if installed.is_file() else None


def _root_causes() -> list[tuple[str, Path, int]]:
    rows = []
    for zoo in ZOOS:
        data = json.loads((ROOT / "reports" / "sweeps" / zoo / "sweep.json").read_text())
        base = Path(data.get("display_base") or ROOT)
        for cause in data["root_causes"]:
            identity = cause["identity"]
            path = _resolved(identity["file"], base)
            if path is not None:
                rows.append(
                    (f"{zoo}:{identity['file']}:{identity['line']}", path, identity["line"])
                )
    return rows


ROWS = _root_causes()


def test_the_summaries_reach_both_kinds_of_code() -> None:
    assert any(is_installed(str(p)) for _, p, _ in ROWS)
    assert sum(not is_installed(str(p)) for _, p, _ in ROWS) >= 8


@pytest.mark.parametrize(("label", "path", "line"), ROWS, ids=[r[0] for r in ROWS])
def test_a_patch_stays_in_the_breaks_own_user_file(label: str, path: Path, line: int) -> None:
    outcome = patch_for(str(path), line, "other")
    if is_installed(str(path)):
        assert outcome == Refusal("not the user's code"), label
        return
    if isinstance(outcome, Refusal):
        return
    assert isinstance(outcome, Patch)
    assert outcome.file == str(path) and outcome.line == line
    for edit in outcome.edits:
        assert edit.first_line <= line <= edit.last_line or edit.unwrap, (label, edit.qualname)
        text = path.read_text(encoding="utf-8").splitlines(keepends=True)
        assert "".join(text[edit.first_line - 1 : edit.last_line]) == edit.before
