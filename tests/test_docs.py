"""README.md stays a front door, and the docs stay true to the CLI and to the files they link."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from advisor.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
# Pages other work is writing now; a link to one of them may wait for it.
PENDING: set[Path] = set()
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_readme_is_a_front_door() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    # The two quick-start commands, exactly (.ci/run runs the second).
    assert "bash scripts/setup.sh && .venv/bin/advisor run examples/scripts/infer_loop.py\n" in text
    assert "\nbash scripts/test.sh\n" in text
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_readme_screenshot_is_there_and_small() -> None:
    image = ROOT / "docs" / "images" / "print_logging-report.png"
    assert f"]({image.relative_to(ROOT)})" in README.read_text(encoding="utf-8")
    assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert image.stat().st_size < 300_000


def test_every_relative_link_in_the_docs_resolves() -> None:
    broken = []
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            if not path.exists() and path not in PENDING:
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


def _synopsis() -> dict[str, set[str]]:
    """The options usage.md's synopsis block names, per command."""
    text = (ROOT / "docs" / "usage.md").read_text(encoding="utf-8")
    block = text.split("```text\n", 1)[1].split("```", 1)[0]
    named: dict[str, set[str]] = {}
    command = ""
    for line in block.splitlines():
        if line.startswith("advisor "):
            command = line.split()[1]
        named.setdefault(command, set()).update(re.findall(r"--[a-z][a-z-]*", line))
    return named


def _parser_options() -> dict[str, set[str]]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {
        name: {s for a in p._actions for s in a.option_strings if s.startswith("--")} - {"--help"}
        for name, p in sub.choices.items()
    }


def test_usage_names_every_option_of_every_command() -> None:
    assert _synopsis() == _parser_options()


def test_usage_says_debug_is_accepted_anywhere() -> None:
    parser = build_parser()
    assert "--debug" in {s for a in parser._actions for s in a.option_strings}
    assert "`--debug` is accepted anywhere" in (ROOT / "docs" / "usage.md").read_text()


def _package(requirement: str) -> str:
    """`ray[default]==2.60.0; python_version < '3.11'` -> `ray`."""
    return re.split(r"[\[<>=!~;\s]", requirement, maxsplit=1)[0]


def test_dependencies_page_says_why_each_package_is_there() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    page = (ROOT / "docs" / "dependencies.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`([A-Za-z0-9_.-]+)", page))
    missing = [_package(r) for r in project["dependencies"] if _package(r) not in named]
    extras = project["optional-dependencies"]
    missing += [extra for extra in extras if extra not in named]
    missing += [_package(r) for r in extras["dev"] if _package(r) not in named]
    assert not missing, f"docs/dependencies.md does not say why these are there: {missing}"
