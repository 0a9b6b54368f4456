"""Every measured figure in README.md and docs/*.md is what benchmarks/doc_figures.py computes
from its committed JSON, and the check catches a figure or a JSON that changed alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import doc_figures
from benchmarks.doc_figure_defs import BLOCKS, EXAMPLE, FIGURES, resolve
from benchmarks.doc_figures import FIG, Generator, check, filled, stale, used_names

ROOT = Path(__file__).resolve().parent.parent
HOW_TO_FIX = "run `.venv/bin/python -m benchmarks.doc_figures` and commit the pages"


@pytest.fixture(scope="module")
def generator() -> Generator:
    return Generator(ROOT)  # shared: the console block runs `advisor show` once


def test_every_figure_in_the_docs_matches_its_json(generator: Generator) -> None:
    found = check(ROOT, generator)
    assert not found, "\n".join([*map(str, found), HOW_TO_FIX])


def test_every_defined_figure_is_quoted_somewhere() -> None:
    defined = {f"fig:{n}" for n in FIGURES} | {f"block:{n}" for n in BLOCKS}
    assert defined - used_names(ROOT) == set()


def test_a_planted_wrong_number_is_caught(generator: Generator) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    marker = next(m for m in FIG.finditer(readme) if m["name"] == "infer_loop.default_ms")
    planted = readme.replace(marker[0], marker[0].replace(marker["text"], "0.19 ms"), 1)
    assert planted != readme

    found = stale(planted, "README.md", generator)

    assert [(s.name, s.found, s.expected) for s in found] == [
        ("fig:infer_loop.default_ms", "0.19 ms", marker["text"])
    ]
    assert str(found[0]).startswith(f"README.md:{readme[: marker.start()].count(chr(10)) + 1}:")
    assert filled(planted, generator) == readme  # regenerating puts the figure back


def test_a_changed_json_is_caught_in_a_copy(tmp_path: Path) -> None:
    """A copy of the repository's example report with another eager median: the page that
    quotes the old figure is stale there, and `fill` rewrites it."""
    report = json.loads((ROOT / EXAMPLE).read_text(encoding="utf-8"))
    eager = resolve(report, "modes[mode=eager].latency")
    eager["median_ms"] = 2 * eager["median_ms"]
    (tmp_path / EXAMPLE).parent.mkdir(parents=True)
    (tmp_path / EXAMPLE).write_text(json.dumps(report), encoding="utf-8")
    page = tmp_path / "docs" / "page.md"
    page.parent.mkdir()
    quoted = Generator(ROOT).figure("infer_loop.eager_ms")
    page.write_text(f"eager: <!-- fig:infer_loop.eager_ms -->{quoted}<!-- /fig -->\n")

    found = check(tmp_path)

    assert [(s.page, s.line, s.found) for s in found] == [("docs/page.md", 1, quoted)]
    assert found[0].expected == f"{eager['median_ms']:.4f} ms"
    assert doc_figures.main(["--check", "--root", str(tmp_path)]) == 1
    assert doc_figures.fill(tmp_path) == [page]
    assert check(tmp_path) == []
    assert doc_figures.main(["--check", "--root", str(tmp_path)]) == 0


def test_an_unknown_name_or_a_missing_json_is_stale(tmp_path: Path) -> None:
    page = tmp_path / "README.md"
    page.write_text(
        "<!-- fig:no.such.figure -->1 ms<!-- /fig -->\n"
        "<!-- fig:isolation.ratio -->2.43x<!-- /fig -->\n"
    )
    found = {s.name: s.expected for s in check(tmp_path)}
    assert found["fig:no.such.figure"].startswith("<no figure named no.such.figure")
    assert found["fig:isolation.ratio"] == "<missing reports/benchmarks/isolation/isolation.json>"


def test_a_stale_block_is_caught_and_refilled(generator: Generator) -> None:
    text = "<!-- block:infer_loop.console -->\n```text\nold output\n```\n<!-- /block -->\n"

    found = stale(text, "README.md", generator)

    assert [s.name for s in found] == ["block:infer_loop.console"]
    refilled = filled(text, generator)
    block = generator.block("infer_loop.console")
    assert block.startswith("```text\nadvisor: infer_loop") and block.endswith("```\n")
    assert refilled == f"<!-- block:infer_loop.console -->\n{block}<!-- /block -->\n"
    assert stale(refilled, "README.md", generator) == []
