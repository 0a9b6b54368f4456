"""What the docs' figures are made of (benchmarks/doc_figures.py): a `Figure` (a committed JSON and
how to read it), a `Block` (quoted output), and the small readers every figure module uses
(`resolve` a path into the JSON, `at`, `span`, `of`). The figures themselves are in
doc_figure_defs.py, doc_figure_replication.py and doc_figure_reruns.py."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

Make = Callable[[Any], str]


@lru_cache(maxsize=64)
def _parsed(path: str, _mtime_ns: int, _size: int) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def load(path: Path) -> Any:
    """The parsed JSON (read again when the file changed)."""
    st = path.stat()
    return _parsed(str(path), st.st_mtime_ns, st.st_size)


@dataclass(frozen=True)
class Figure:
    """One inline figure: `make` applied to the JSON at `source` (relative to the root)."""

    source: str
    make: Make

    def text(self, root: Path) -> str:
        path = root / self.source
        if not path.exists():
            return f"<missing {self.source}>"
        return self.make(load(path))


@dataclass(frozen=True)
class Block:
    """A quoted block of real output, made from the file at `source`."""

    source: str
    make: Callable[[Path], str]

    def text(self, root: Path) -> str:
        path = root / self.source
        if not path.exists():
            return f"<missing {self.source}>\n"
        return self.make(path)


_STEP = re.compile(r"^(?P<key>[^\[\]]+)(?:\[(?P<field>[^=\]]+)=(?P<value>[^\]]*)\])?$")


def resolve(data: Any, path: str) -> Any:
    """`a.b.0.c` into dicts and lists; `list[key=value]` picks the one record whose `key` is
    `value` (as text)."""
    for step in path.split("."):
        m = _STEP.match(step)
        if m is None:
            raise ValueError(f"bad JSON path step {step!r} in {path!r}")
        key = m["key"]
        data = data[int(key)] if isinstance(data, list) else data[key]
        if m["field"] is not None:
            hits = [r for r in data if str(r.get(m["field"])) == m["value"]]
            if len(hits) != 1:
                raise ValueError(f"{path!r}: {len(hits)} records with {m['field']}={m['value']}")
            data = hits[0]
    return data


def at(path: str, fmt: str = "{}") -> Make:
    """The value at `path`, formatted."""
    return lambda data: fmt.format(resolve(data, path))


def span(values: Iterable[float], fmt: str, unit: str = "") -> str:
    """`low-high` (one number when they round alike)."""
    vals = sorted(values)
    low, high = fmt.format(vals[0]), fmt.format(vals[-1])
    return f"{low}{unit}" if low == high else f"{low}-{high}{unit}"


def of(part: int, whole: int) -> str:
    return f"{part} of {whole}"
