"""The value a library works out for an argument left None, recorded on the run's own inputs:
one eager call of the workload under a line tracer that watches only the functions holding an
`if NAME is None:` block on a break's stack (`advisor.measure.rewrite.option`), and reads NAME
once the block has run. The option's what-if passes that value, so what it measures is the
library's own computation skipped, with the same result."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from advisor.core.model import BreakSite, LibraryOption
from advisor.core.taxonomy import in_library
from advisor.measure.rewrite.option import library_option

Key = tuple[str, str]  # (file, function qualified name)


def with_library_options(
    sites: tuple[BreakSite, ...], call: Callable[[], Any]
) -> tuple[BreakSite, ...]:
    """The sites, each library break that a constructor argument would skip given its option
    and, where one eager call of `call` shows it, the value the library worked out. The call
    runs only where an option is found."""
    found = {s.id: library_option(s) for s in sites if in_library(s)}
    options = [o for o in found.values() if o is not None]
    if not options:
        return sites
    values = recorded_values(call, options)
    return tuple(
        replace(s, option=replace(o, value=values.get(_key(o))))
        if (o := found.get(s.id)) is not None
        else s
        for s in sites
    )


def recorded_values(call: Callable[[], Any], options: list[LibraryOption]) -> dict[Key, str]:
    """Each option's value as the library set it during one call (Python source for a plain
    number, string or bool; other values are left out: the user passes what their data has)."""
    watched = {_key(o): o for o in options}
    values: dict[Key, str] = {}

    def local(frame: types.FrameType, event: str, arg: Any) -> Any:
        key = (frame.f_code.co_filename, frame.f_code.co_qualname)
        option = watched[key]
        if event == "return" or (event == "line" and frame.f_lineno > option.computed_until):
            literal = _literal(frame.f_locals.get(option.name))
            if literal is not None:
                values.setdefault(key, literal)
            return None
        return local

    def calls(frame: types.FrameType, event: str, arg: Any) -> Any:
        key = (frame.f_code.co_filename, frame.f_code.co_qualname)
        return local if key in watched and key not in values else None

    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        call()
    except Exception:  # the eager call ran before; a failure here only loses the value
        pass
    finally:
        sys.settrace(previous)
    return values


def _key(option: LibraryOption) -> Key:
    return (option.computed_at.file, option.computed_at.function)


def _literal(value: Any) -> str | None:
    """Python source for the value, where it is a plain scalar (a numpy scalar included)."""
    item = getattr(value, "item", None)
    if type(value).__module__ == "numpy" and callable(item):
        value = item()
    if isinstance(value, bool | int | float | str):
        return repr(value)
    return None
