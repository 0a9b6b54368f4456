"""Every measured figure that README.md and docs/*.md quote, computed from a committed JSON.

A figure sits in a page between markers, on one line:

    the default mode's median, <!-- fig:print_logging.default_ms -->0.1468 ms<!-- /fig -->, ...

and a quoted piece of real output between block markers, each on a line of its own:

    <!-- block:print_logging.console -->
    ```text
    ...
    ```
    <!-- /block -->

`FIGURES` and `BLOCKS` (benchmarks/doc_figure_defs.py) name, for each marker, the JSON under
reports/ it reads and how (a path into the JSON and a format, or a small computation). A page
may not quote a name that is not defined there.

    .venv/bin/python -m benchmarks.doc_figures           # rewrite every marker's text in place
    .venv/bin/python -m benchmarks.doc_figures --check   # exit 1, one line per stale marker

tests/test_doc_figures.py runs the check, so a figure in the docs cannot drift from its JSON:
after a new benchmark or example run is committed, run the script and commit the pages.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from benchmarks.doc_figure_base import Block, Figure
from benchmarks.doc_figure_defs import BLOCKS, FIGURES

ROOT = Path(__file__).resolve().parent.parent

FIG = re.compile(r"<!-- fig:(?P<name>[\w.\-]+) -->(?P<text>.*?)<!-- /fig -->")
BLOCK = re.compile(
    r"^<!-- block:(?P<name>[\w.\-]+) -->\n(?P<text>.*?)^<!-- /block -->$", re.M | re.S
)


@dataclass(frozen=True)
class Stale:
    """A marker whose text is not what its JSON gives."""

    page: str  # relative to the root
    line: int
    name: str
    found: str
    expected: str

    def __str__(self) -> str:
        return (
            f"{self.page}:{self.line}: {self.name} reads {self.found!r}, "
            f"its JSON gives {self.expected!r}"
        )


def pages(root: Path) -> list[Path]:
    """README.md and every Markdown page under docs/."""
    found = [root / "README.md"] if (root / "README.md").exists() else []
    return found + sorted((root / "docs").rglob("*.md"))


class Generator:
    """Computes each figure and block once per root (a JSON is read once)."""

    def __init__(
        self,
        root: Path,
        figures: Mapping[str, Figure] = FIGURES,
        blocks: Mapping[str, Block] = BLOCKS,
    ) -> None:
        self.root = root
        self.figures = figures
        self.blocks = blocks
        self._cache: dict[str, str] = {}

    def figure(self, name: str) -> str:
        return self._once(f"fig:{name}", lambda: self._figure(name))

    def block(self, name: str) -> str:
        return self._once(f"block:{name}", lambda: self._block(name))

    def _once(self, key: str, make: Callable[[], str]) -> str:
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def _figure(self, name: str) -> str:
        if name not in self.figures:
            return f"<no figure named {name} in benchmarks/doc_figure_defs.py>"
        return self.figures[name].text(self.root)

    def _block(self, name: str) -> str:
        if name not in self.blocks:
            return f"<no block named {name} in benchmarks/doc_figure_defs.py>\n"
        return self.blocks[name].text(self.root)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def markers(text: str) -> Iterator[tuple[str, str, str, int]]:
    """(kind, name, current text, line) of every marker in a page, in order."""
    for m in FIG.finditer(text):
        yield "fig", m["name"], m["text"], _line_of(text, m.start())
    for m in BLOCK.finditer(text):
        yield "block", m["name"], m["text"], _line_of(text, m.start())


def stale(text: str, page: str, gen: Generator) -> list[Stale]:
    """Every marker in `text` whose content differs from what the generator gives."""
    out = []
    for kind, name, found, line in markers(text):
        expected = gen.figure(name) if kind == "fig" else gen.block(name)
        if found != expected:
            out.append(Stale(page, line, f"{kind}:{name}", found, expected))
    return out


def filled(text: str, gen: Generator) -> str:
    """`text` with every marker's content generated again."""

    def fig(m: re.Match[str]) -> str:
        return f"<!-- fig:{m['name']} -->{gen.figure(m['name'])}<!-- /fig -->"

    def block(m: re.Match[str]) -> str:
        return f"<!-- block:{m['name']} -->\n{gen.block(m['name'])}<!-- /block -->"

    return BLOCK.sub(block, FIG.sub(fig, text))


def check(root: Path, gen: Generator | None = None) -> list[Stale]:
    gen = gen or Generator(root)
    out = []
    for page in pages(root):
        out += stale(page.read_text(encoding="utf-8"), str(page.relative_to(root)), gen)
    return out


def fill(root: Path, gen: Generator | None = None) -> list[Path]:
    """Rewrite the pages whose markers are stale; the pages changed."""
    gen = gen or Generator(root)
    changed = []
    for page in pages(root):
        text = page.read_text(encoding="utf-8")
        new = filled(text, gen)
        if new != text:
            page.write_text(new, encoding="utf-8")
            changed.append(page)
    return changed


def used_names(root: Path) -> set[str]:
    """`fig:NAME` and `block:NAME` of every marker in the pages."""
    return {
        f"{kind}:{name}"
        for page in pages(root)
        for kind, name, _, _ in markers(page.read_text(encoding="utf-8"))
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="report stale markers, change nothing")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository root")
    args = parser.parse_args(argv)
    if args.check:
        found = check(args.root)
        for s in found:
            print(s)
        if found:
            print("run `.venv/bin/python -m benchmarks.doc_figures` to regenerate them")
        return 1 if found else 0
    for page in fill(args.root):
        print(f"updated {page.relative_to(args.root)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
