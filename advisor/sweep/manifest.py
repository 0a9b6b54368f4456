"""The sweep manifest: a TOML file naming the targets, validated strictly.

```toml
[sweep]
name = "transformers-zoo"
timeout_s = 900                        # per-target timeout (CLI --timeout overrides)

[defaults]                             # `advisor run` options for every target
device = "cpu"
repeats = 10

[[targets]]
name = "mixtral"                       # unique; also the target's folder name
target = "hf_models.py:build"          # a path is relative to the manifest's folder
params = { model = "mixtral" }         # -> --param model="mixtral"
options = { repeats = 5, no_what_if = true }   # booleans are flags
```
Every problem is one `ManifestError` line naming the file, the line (where it can be found)
and the key. Options are checked against the run options' one definition
(`advisor.core.options`), so a new run option is accepted here without a change.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from advisor.core.errors import AdvisorError
from advisor.core.files import read_text
from advisor.core.options import MEASURE_OPTIONS, RUN_OPTIONS, Option, by_dest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

DEFAULT_TIMEOUT_S = 3600.0
# Files the sweep writes beside the target folders: no target may be named like them.
RESERVED_NAMES = frozenset(
    {"index.json", "index.json.tmp", "sweep.json", "sweep.md", "sweep.html", "compare.md"}
)
_TOP_KEYS = ("sweep", "defaults", "targets")
_SWEEP_KEYS = ("name", "timeout_s")
_TARGET_KEYS = ("name", "target", "params", "options")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


class ManifestError(AdvisorError):
    """A manifest problem, one line: `FILE:LINE: WHERE: what is wrong`."""


@dataclass(frozen=True)
class TargetSpec:
    """One target to run: `advisor run TARGET --out DIR --quiet *args`."""

    name: str
    target: str  # as given, with a file path made absolute
    params: dict[str, Any]
    options: dict[str, Any]  # the defaults merged with the target's own options
    args: tuple[str, ...]  # the `--param` and option arguments, in that order

    @property
    def device(self) -> str:
        return str(self.options.get("device", "auto"))


@dataclass(frozen=True)
class Manifest:
    path: Path  # absolute
    name: str
    timeout_s: float
    targets: tuple[TargetSpec, ...]

    @property
    def folder(self) -> Path:
        return self.path.parent


def load_manifest(path: str | Path) -> Manifest:
    """Read and validate a manifest file; raises ManifestError (one line)."""
    file = Path(path)
    if not file.is_file():
        raise ManifestError(f"manifest not found: {file}")
    text = read_text(file, "manifest", ManifestError)
    return parse_manifest(text, file.resolve())


def parse_manifest(text: str, path: Path) -> Manifest:
    """Validate manifest text; `path` (absolute) anchors relative target paths and errors."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"{path}: not valid TOML: {exc}") from None
    return _Validator(text, path).manifest(data)


def settable_options() -> dict[str, Option]:
    """The `advisor run` options a manifest may set, by their name with '_' (`min_block_ms`);
    the sweep sets `--out`, `--quiet` and `--param` itself."""
    return by_dest((*MEASURE_OPTIONS, *RUN_OPTIONS))


class _Validator:
    """Checks one manifest's data; knows its text to point errors at a line."""

    def __init__(self, text: str, path: Path) -> None:
        self.text = text
        self.path = path
        self.options = settable_options()

    def fail(
        self, section: str, index: int | None, keys: tuple[str, ...], message: str
    ) -> NoReturn:
        line = find_line(self.text, section, index, keys)
        where = f"{self.path}:{line}" if line else str(self.path)
        raise ManifestError(f"{where}: {message}")

    def manifest(self, data: dict[str, Any]) -> Manifest:
        self.known_keys(data, _TOP_KEYS, "", None, "the manifest")
        sweep = self.table(data, "sweep", "", None, "[sweep]")
        self.known_keys(sweep, _SWEEP_KEYS, "sweep", None, "[sweep]")
        name = sweep.get("name", re.sub(r"[^A-Za-z0-9_.-]+", "_", self.path.stem).strip("_."))
        if not isinstance(name, str) or not _NAME.match(name):
            self.fail("sweep", None, ("name",), "[sweep] name must be a name like 'my-zoo'")
        timeout = sweep.get("timeout_s", DEFAULT_TIMEOUT_S)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            self.fail("sweep", None, ("timeout_s",), "[sweep] timeout_s must be a positive number")
        defaults = self.table(data, "defaults", "", None, "[defaults]")
        self.option_args(defaults, "defaults", None, (), "[defaults]")
        targets = data.get("targets")
        if not isinstance(targets, list) or not targets:
            self.fail("", None, ("targets",), "the manifest needs at least one [[targets]] table")
        specs = tuple(self.target(i, entry, defaults) for i, entry in enumerate(targets))
        self.unique_names(specs)
        return Manifest(self.path, name, float(timeout), specs)

    def table(
        self, data: dict[str, Any], key: str, section: str, index: int | None, label: str
    ) -> dict[str, Any]:
        value = data.get(key, {})
        if not isinstance(value, dict):
            self.fail(section, index, (key,), f"{label} must be a table")
        return value

    def known_keys(
        self,
        data: dict[str, Any],
        allowed: tuple[str, ...],
        section: str,
        index: int | None,
        label: str,
    ) -> None:
        for key in data:
            if key not in allowed:
                self.fail(
                    section,
                    index,
                    (key,),
                    f"{label}: unknown key '{key}' (allowed: {', '.join(allowed)})",
                )

    def target(self, index: int, entry: Any, defaults: dict[str, Any]) -> TargetSpec:
        label = f"[[targets]] #{index + 1}"
        if not isinstance(entry, dict):
            self.fail("", None, ("targets",), f"{label} must be a table")
        name = entry.get("name")
        if name is not None:
            label = f"target '{name}'"
        self.known_keys(entry, _TARGET_KEYS, "targets", index, label)
        for key in ("name", "target"):
            if key not in entry:
                self.fail("targets", index, (), f"{label}: missing '{key}'")
            if not isinstance(entry[key], str) or not entry[key].strip():
                self.fail("targets", index, (key,), f"{label}: '{key}' must be a non-empty string")
        if not _NAME.match(name) or name in RESERVED_NAMES:
            self.fail(
                "targets",
                index,
                ("name",),
                f"{label}: a name is letters, digits, '_', '.' or '-' (it names a folder)",
            )
        params = self.table(entry, "params", "targets", index, f"{label}: params")
        options = {
            **defaults,
            **self.table(entry, "options", "targets", index, f"{label}: options"),
        }
        args = self.param_args(params, index, label) + self.option_args(
            options, "targets", index, ("options",), f"{label}: options"
        )
        return TargetSpec(name, self.resolve(entry["target"]), params, options, args)

    def param_args(self, params: dict[str, Any], index: int, label: str) -> tuple[str, ...]:
        args: list[str] = []
        for key, value in params.items():
            if not key.isidentifier():
                self.fail(
                    "targets",
                    index,
                    (key, "params"),
                    f"{label}: param '{key}' is not a Python name",
                )
            try:
                encoded = json.dumps(value)
            except (TypeError, ValueError):
                self.fail(
                    "targets",
                    index,
                    (key, "params"),
                    f"{label}: param '{key}' must be a string, number, boolean, array or table",
                )
            args += ["--param", f"{key}={encoded}"]
        return tuple(args)

    def option_args(
        self,
        options: dict[str, Any],
        section: str,
        index: int | None,
        parents: tuple[str, ...],
        label: str,
    ) -> tuple[str, ...]:
        args: list[str] = []
        for key, value in options.items():
            option = self.options.get(key)
            if option is None:
                known = ", ".join(sorted(self.options))
                self.fail(
                    section,
                    index,
                    (key, *parents),
                    f"{label}: unknown option '{key}' (known: {known})",
                )
            problem = option.problem(value)
            if problem:
                self.fail(section, index, (key, *parents), f"{label}: option '{key}' {problem}")
            args += option.to_args(value)
        return tuple(args)

    def unique_names(self, specs: tuple[TargetSpec, ...]) -> None:
        seen: set[str] = set()
        for i, spec in enumerate(specs):
            if spec.name in seen:
                self.fail("targets", i, ("name",), f"duplicate target name '{spec.name}'")
            seen.add(spec.name)

    def resolve(self, target: str) -> str:
        """A file target relative to the manifest's folder made absolute; others as given."""
        where, sep, factory = target.rpartition(":") if ":" in target else (target, "", "")
        if not (where.endswith(".py") or "/" in where or "\\" in where):
            return target
        path = Path(where).expanduser()
        if not path.is_absolute():
            path = self.path.parent / path
        return f"{path}{sep}{factory}"


def find_line(text: str, section: str, index: int | None, keys: tuple[str, ...]) -> int | None:
    """Best effort: the 1-based line defining the first of `keys` found in a table.

    `section` is a table name ('' for the top level), `index` which `[[section]]` of an array
    of tables. Falls back to the table's header line; None when nothing matches.
    """
    lines = list(_section_lines(text, section, index))
    for key in keys:
        for number, raw, header in lines:
            if _defines(raw, header, section, key):
                return number
    return next((number for number, _, header in lines if header == section), None)


_HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\- ]+?)\s*\]\]?\s*(#.*)?$")


def _section_lines(
    text: str, section: str, index: int | None
) -> Iterator[tuple[int, str, str | None]]:
    """(line number, text, table header or None) of the lines in one table and its sub-tables;
    for the top level, its lines and every table header."""
    current, count = "", -1
    for number, raw in enumerate(text.splitlines(), 1):
        match = _HEADER.match(raw)
        header = match.group(2).strip() if match else None
        if match:
            count += match.group(1) == "[[" and header == section
            current = header or ""
        head = current.split(".")[0]
        if (section == "" and header is not None) or (
            head == section and (index is None or count == index)
        ):
            yield number, raw, header


def _defines(raw: str, header: str | None, section: str, key: str) -> bool:
    if header is not None:
        parts = header.split(".")
        return parts[0] == key if section == "" else parts[:2] == [section, key]
    return re.match(rf"^\s*{re.escape(key)}\s*[=.]", raw) is not None
