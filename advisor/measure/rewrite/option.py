"""Library options: an argument a library works out for itself when it is left None, on the way
to a break (torch-free: `ast` and text only).

    def scaling_parameters(x, y, p, blur, reach, diameter, scaling):
        if diameter is None:                        # the library computes it, every call
            diameter = max_diameter(x, y)           # -> `.item()`: the graph breaks

When a class on the break's stack takes the same argument in its constructor and keeps it
(`def __init__(self, ..., diameter=None): ... self.diameter = diameter`), passing it there skips
the work and its break. Which value to pass is the user's knowledge; the one the library worked
out on the run's inputs is recorded where the workload runs (`advisor.measure.library_option`)
so the fix can be measured and its value shown.
"""

from __future__ import annotations

import ast
import functools
import os
from dataclasses import dataclass

from advisor.core.model import BreakSite, FunctionEdit, LibraryOption, Location, Patch
from advisor.measure.rewrite.locate import Site, locate, qualnames
from advisor.measure.rewrite.outcome import Refusal
from advisor.measure.rewrite.source import Source, last_line, read_source

KIND = "library_option"


@dataclass(frozen=True)
class ComputedDefault:
    """`if NAME is None:` around a frame's line: the argument and the block's lines."""

    name: str
    if_line: int
    end_line: int  # the block's last line: the value is set once a line after it runs
    function: str  # the qualified name of the function that holds it


def library_option(site: BreakSite) -> LibraryOption | None:
    """The option that skips the work leading to the break, if the stack shows one: the
    innermost frame whose line lies under `if NAME is None:` (NAME its own parameter), and the
    outermost frame that is a method of a class taking NAME in `__init__` and keeping it."""
    frames = list(site.stack) or [site.where]
    for index in range(len(frames) - 1, -1, -1):
        computed = computed_default(frames[index])
        if computed is None:
            continue
        for frame in frames[: index + 1]:
            owner = _owner_taking(frame, computed.name)
            if owner is not None:
                name, line = owner
                where = Location(frames[index].file, computed.if_line, computed.function)
                return LibraryOption(
                    computed.name, name, frame.file, line, where, computed.end_line
                )
        return None
    return None


def computed_default(frame: Location) -> ComputedDefault | None:
    """The `if NAME is None:` block that holds the frame's line, NAME a parameter of the
    function there."""
    site = _site(frame)
    if site is None:
        return None
    params = _parameters(site.function)
    node: ast.AST | None = site.statement
    while node is not None and node is not site.function:
        if isinstance(node, ast.If) and node.lineno < frame.line:
            name = _none_test(node.test)
            if name in params and any(_holds(s, frame.line) for s in node.body):
                return ComputedDefault(
                    name, node.lineno, last_line(node), site.qualnames[site.function]
                )
        node = site.parents.get(node)
    return None


def _owner_taking(frame: Location, name: str) -> tuple[str, int] | None:
    """The class of the method at `frame` when its `__init__` takes `name` with a None default
    and keeps it as `self.<name>`: (its qualified name, the `__init__` line)."""
    site = _site(frame)
    if site is None:
        return None
    qualname = site.qualnames[site.function]
    if "." not in qualname or "<locals>" in qualname:
        return None
    owner = qualname.rsplit(".", 1)[0]
    init = next(
        (f for f, q in qualnames(site.source.tree).items() if q == f"{owner}.__init__"), None
    )
    if init is None or not _takes_none(init, name) or not _keeps(init, name):
        return None
    return owner, min([d.lineno for d in init.decorator_list] + [init.lineno])


def _site(frame: Location) -> Site | None:
    """The frame's line located in its file. Every library break's stack is searched, and
    stacks share their frames (a break met again in each resumed frame) and files (a large
    library module holds many of them): each file is parsed once and each line located once
    while the file is unchanged (it is keyed by its modification time and size)."""
    try:
        stat = os.stat(frame.file)
    except OSError:
        return None
    return _located(frame.file, frame.line, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=256)
def _located(file: str, line: int, mtime_ns: int, size: int) -> Site | None:
    source = _parsed(file, mtime_ns, size)
    site = locate(source, line) if source is not None else None
    return None if isinstance(site, Refusal) else site


@functools.lru_cache(maxsize=16)
def _parsed(file: str, mtime_ns: int, size: int) -> Source | None:
    source = read_source(file)
    return None if isinstance(source, Refusal) else source


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    args = function.args
    return {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}


def _none_test(test: ast.expr) -> str | None:
    """`NAME is None` -> NAME."""
    if (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Is)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    ):
        return test.left.id
    return None


def _holds(statement: ast.stmt, line: int) -> bool:
    return statement.lineno <= line <= last_line(statement)


def _takes_none(init: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """`name` is a parameter of `__init__` whose default is None."""
    args = init.args
    positional = [*args.posonlyargs, *args.args]
    with_defaults = positional[len(positional) - len(args.defaults) :]
    pairs = list(zip(with_defaults, args.defaults, strict=True))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d]
    return any(a.arg == name and isinstance(d, ast.Constant) and d.value is None for a, d in pairs)


def _keeps(init: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """`self.<name> = <name>` in `__init__`'s body."""
    return any(
        isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Name)
        and node.value.id == name
        and any(
            isinstance(t, ast.Attribute)
            and t.attr == name
            and isinstance(t.value, ast.Name)
            and t.value.id == "self"
            for t in node.targets
        )
        for node in ast.walk(init)
    )


def option_patch(option: LibraryOption) -> Patch | None:
    """The option as a patch record: set on the live objects of its class when measured
    (`advisor.measure.patching.SetOption`), shown as the argument to pass. No hunks: the
    user's line that builds the object is not on the break's stack. None where no value was
    recorded (the user's data decides it: nothing to measure with)."""
    if option.value is None:
        return None
    init = FunctionEdit(f"{option.owner}.__init__", option.owner_line, option.owner_line, "", "")
    return Patch(
        kind=KIND,
        file=option.owner_file,
        line=option.owner_line,
        edits=(init,),
        hunks="",
        names=(option.name, option.value, option.owner),
        setup=(f"self.{option.name} = {option.value}",),
    )
