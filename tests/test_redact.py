"""`--redact`: no output of a redacted report holds an absolute path or a line of source, while
file names, line numbers and function names stay."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.core.artifacts import measurements_to_json
from advisor.core.model import (
    BreakSite,
    LibraryOption,
    Location,
    ModeError,
    Note,
    Report,
    WhatIf,
    report_to_json,
)
from advisor.core.redact import Redactor, redact, redact_measurements
from advisor.render.console import render_text
from advisor.render.html import render_html
from advisor.render.json_report import render_json
from advisor.render.markdown import render_markdown
from tests.support.reports import FILE, full_report, measurements_of

TORCH_FILE = "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py"
SOURCE = "secret_weights = load('/home/u/proj/weights.bin')  # SOURCE-LINE"
# An absolute path: a slash that starts a token, then a folder (an https:// link is not one).
ABSOLUTE = re.compile(r"(?<![\w.:/+\-])/[\w.-]+/")
EMBEDDED_PNG = re.compile(r"data:image/png;base64,[A-Za-z0-9+/=]+")


def leaky_report() -> Report:
    """The hand-made report, with source text, absolute paths and installed code everywhere a
    report can carry them."""
    base = full_report()
    with_code = Location(FILE, 7, "trace", SOURCE)
    library = BreakSite(
        "B2",
        "GB0098",
        "Skip calling `torch.compiler.disable()`d function",
        Location(TORCH_FILE, 1773, "_call_impl", SOURCE),
        explanation=f"raised in {TORCH_FILE}",
        reached_from=Location(FILE, 12, "forward", SOURCE),
        stack=(Location(FILE, 12, "forward", SOURCE), Location(TORCH_FILE, 1773, "f", SOURCE)),
        option=LibraryOption("scale", "Norm", FILE, 3, Location(FILE, 9, "norm", SOURCE), 10),
    )
    site = replace(base.sites[0], where=with_code, also_at=(with_code,))
    entry = replace(base.breaks[0], site=site, causes=(library,))
    fullgraph = replace(
        base.modes[2],
        error=ModeError("Crash", f"the process was killed at {FILE}", None, None, FILE, 7, SOURCE),
    )
    what_if = replace(base.what_ifs[0], new_breaks=(with_code,), error=f"Unsupported: see {FILE}:7")
    return replace(
        base,
        workload=replace(
            base.workload,
            target=f"{FILE}:workload",
            params=(("weights", json.dumps("/home/u/proj/weights.bin")),),
        ),
        modes=(*base.modes[:2], fullgraph),
        sites=(site, library),
        breaks=(entry,),
        what_ifs=(what_if, WhatIf("k", "k", "isolate", "failed", error=f"at {TORCH_FILE}")),
        actions=tuple(replace(a, where=with_code if a.where else None) for a in base.actions),
        graphs=tuple(replace(g, recompile_reason=f"guard at {FILE}:5") for g in base.graphs),
        warnings=(
            Note("capture_unreadable", detail=f"could not read {FILE}"),
            Note("probe_failed", FILE, detail="C:\\Users\\u\\model.py is on another drive"),
        ),
    )


def outputs(report: Report) -> dict[str, str]:
    return {
        "records": report_to_json(report),
        "json": render_json(report),
        "md": render_markdown(report),
        "html": EMBEDDED_PNG.sub("data:image/png;base64,", render_html(report)),
        # wide: a path folded across two lines would hide from the check
        "text": render_text(report, width=1000),
    }


def test_the_unredacted_report_holds_what_redaction_removes() -> None:
    """So the next test can fail: without --redact the source and the paths are there."""
    shown = outputs(leaky_report())
    assert all("SOURCE-LINE" in text for text in shown.values())
    assert ABSOLUTE.search(shown["json"]) and ABSOLUTE.search(shown["md"])


def test_no_output_of_a_redacted_report_has_an_absolute_path_or_source() -> None:
    for name, text in outputs(redact(leaky_report())).items():
        assert "SOURCE-LINE" not in text, name
        assert "secret_weights" not in text, name
        assert ABSOLUTE.search(text) is None, (name, ABSOLUTE.search(text))
        assert "C:\\\\Users" not in text and "C:\\Users" not in text, name


def test_file_names_lines_functions_and_installed_packages_stay() -> None:
    shown = outputs(redact(leaky_report()))
    assert "demo.py:7" in shown["md"] and "demo.py:7" in shown["text"]
    assert "torch/nn/modules/module.py:1773" in shown["md"]
    records = json.loads(shown["records"])
    assert records["redacted"] is True
    assert records["workload"]["target"] == "demo.py:workload"
    assert records["sites"][1]["where"] == {
        "file": ".../site-packages/torch/nn/modules/module.py",
        "line": 1773,
        "function": "_call_impl",
        "code": "",
    }
    assert records["modes"][2]["error"]["file"] == "demo.py"
    assert "redacted: source text and absolute paths removed" in shown["md"]


def test_redacting_twice_changes_nothing_more() -> None:
    once = redact(leaky_report())
    assert redact(once) == once


def test_measurements_are_redacted_like_the_report() -> None:
    leaky = measurements_of(leaky_report())
    assert "SOURCE-LINE" in measurements_to_json(leaky)
    text = measurements_to_json(redact_measurements(leaky))
    assert "SOURCE-LINE" not in text and ABSOLUTE.search(text) is None
    assert "demo.py" in text and '"line":7' in text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("see /home/u/proj/sub/x.py:3", "see sub/x.py:3"),
        ("https://example.org/a/b.html stays", "https://example.org/a/b.html stays"),
        ("1/0 and 2/1 are compile ids", "1/0 and 2/1 are compile ids"),
        ("/etc/secret/key.pem leaked", ".../key.pem leaked"),
        ("(/usr/lib/python3.11/logging/__init__.py)", "(.../lib/python3.11/logging/__init__.py)"),
        ("ms/call and a/b", "ms/call and a/b"),
    ],
)
def test_paths_in_text(text: str, expected: str) -> None:
    assert Redactor("/home/u/proj").text(text) == expected


def test_show_redact_redacts_a_saved_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "report.json"
    path.write_text(render_json(leaky_report()))
    assert main(["show", str(path), "--format", "json"]) == 0
    assert "/home/u/proj" in capsys.readouterr().out
    for fmt in ("json", "md", "html", "text"):
        assert main(["show", str(path), "--format", fmt, "--redact"]) == 0
        shown = EMBEDDED_PNG.sub("", capsys.readouterr().out)
        assert ABSOLUTE.search(shown) is None and "SOURCE-LINE" not in shown, fmt


def test_redaction_and_the_renderers_run_without_torch() -> None:
    """`advisor show --redact` works where torch is not installed (a reviewer's laptop)."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import advisor.judge.attribute, advisor.judge.advise, advisor.gate.compare\n"
        "import advisor.render, advisor.core.model\n"
        "from advisor.core.redact import redact\n"
        "from advisor.render.markdown import render_markdown\n"
        "from tests.support.reports import full_report\n"
        "assert 'demo.py:7' in render_markdown(redact(full_report()))\n"
    )
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
