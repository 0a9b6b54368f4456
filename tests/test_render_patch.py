"""A generated patch in every rendering: the action reads "Apply this patch", report.md and
report.html show its unified diff (source text cannot inject markup), report.json carries it
and reads back equal, the console fits the terminal, a redacted report holds no source; and
`--write-patches` writes files that `git apply --check` accepts in the file's work tree,
never over an existing one."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from advisor.core.errors import AdvisorError
from advisor.core.model import (
    Action,
    FunctionEdit,
    Location,
    Patch,
    Report,
    WhatIf,
    report_from_json,
)
from advisor.core.redact import redact
from advisor.render.console import render_text
from advisor.render.html import render_html
from advisor.render.json_report import render_json
from advisor.render.markdown import render_markdown
from advisor.render.patch_files import check_patch_dir, write_patches
from tests.support.reports import FILE, full_report

BEFORE = 'def trace(x):\n    """Log."""\n    print(x)\n'
AFTER = 'def trace(x):\n    """Log."""\n'
HUNKS = '@@ -5,3 +5,2 @@\n def trace(x):\n     """Log."""\n-    print(x)  # <b>```\n'


def patch(file: str = FILE, hunks: str = HUNKS) -> Patch:
    edit = FunctionEdit("trace", 5, 7, BEFORE, AFTER)
    return Patch("side_effect", file, 7, (edit,), hunks, names=("print",))


def patched_report(p: Patch | None = None) -> Report:
    p = p or patch()
    base = full_report()
    w = WhatIf(
        "patch:side_effect@7",
        "side_effect",
        "rewrite",
        "measured",
        ("B1",),
        ("B1",),
        baseline_ms=0.5,
        variant_ms=0.46,
        saving_ms=0.04,
        saving_ci_ms=(0.03, 0.05),
        rounds=7,
        matches_eager=True,
        kind="patch",
        patch=p,
    )
    action = Action(
        "patch",
        0.04,
        (0.03, 0.05),
        measured=True,
        breaks=("B1",),
        matches_eager=True,
        fix="rewrite",
        where=Location(p.file, p.line, "trace"),
        step_ms=0.46,
        patch=p,
    )
    return dataclasses.replace(
        base, what_ifs=(*base.what_ifs, w), actions=(action, *base.actions[1:])
    )


def test_markdown_shows_the_diff_fenced() -> None:
    md = render_markdown(patched_report())
    assert "Apply this patch at demo.py:7: remove the `print` call" in md
    assert "## Patches" in md
    assert "````diff\n--- a/demo.py\n+++ b/demo.py\n@@ -5,3 +5,2 @@" in md
    assert "-    print(x)  # <b>```\n````" in md  # the fence outlasts the backticks in the code


def test_html_escapes_the_diff() -> None:
    page = render_html(patched_report())
    assert '<span class="del">-    print(x)  # &lt;b&gt;```</span>' in page
    assert "<b>```" not in page


def test_json_carries_the_patch_and_reads_back() -> None:
    report = patched_report()
    text = render_json(report)
    data = json.loads(text)
    assert data["actions"][0]["diff"].startswith("--- a/demo.py\n+++ b/demo.py\n@@")
    assert data["patches"][0]["name"] == "01-side_effect-demo_py-7.patch"
    assert report_from_json(text) == report


def test_console_fits_and_shows_the_diff() -> None:
    text = render_text(patched_report(), width=80)
    assert "Patch 01-side_effect-demo_py-7.patch" in text
    assert "-    print(x)" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_redacted_report_holds_no_source() -> None:
    report = redact(patched_report())
    patches = [x.patch for x in (*report.what_ifs, *report.actions) if x.patch is not None]
    assert patches and all(p.redacted and not p.hunks for p in patches)
    assert "print(x)" not in render_markdown(report)
    assert write_patches(report, Path("never-made")) == []  # no text to write


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_written_patch_applies_in_the_work_tree(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    source = repo / "pkg" / "model.py"
    source.write_text("import os\n\n\n\n" + BEFORE + "\n\nX = 1\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    hunks = '@@ -5,5 +5,4 @@\n def trace(x):\n     """Log."""\n-    print(x)\n \n \n'
    report = patched_report(patch(str(source), hunks))
    out = tmp_path / "patches"
    written = write_patches(report, out)
    assert [w.apply_in for w in written] == [str(repo)]
    assert written[0].path.read_text().startswith("--- a/pkg/model.py\n+++ b/pkg/model.py\n")
    check = subprocess.run(
        ["git", "apply", "--check", str(written[0].path)], cwd=repo, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stderr
    with pytest.raises(AdvisorError, match=r"already holds \.patch files"):
        check_patch_dir(out)
    with pytest.raises(FileExistsError):
        write_patches(report, out)
