"""The versioned JSON round trip of every record: dataclasses to JSON and back, guided by their
type hints, and a loader that checks a document's schema version before reading it.

A record written by this version and read again gives an equal object. Unknown keys are ignored
(derived fields, or a newer writer's additions); missing keys take their defaults.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from advisor.core.kinds import coerced

T = TypeVar("T")


def to_jsonable(value: Any, compact: bool = False) -> Any:
    """Dataclasses become dicts (field order kept), tuples become lists. `compact` leaves out
    fields that hold their default (the reader puts the default back), for large records."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: to_jsonable(getattr(value, f.name), compact)
            for f in dataclasses.fields(value)
            if not (compact and _is_default(f, getattr(value, f.name)))
        }
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v, compact) for v in value]
    if isinstance(value, dict):
        return {str(k): to_jsonable(v, compact) for k, v in value.items()}
    return value


def _is_default(f: dataclasses.Field[Any], value: Any) -> bool:
    if f.name == "schema_version":  # always written: the reader checks it first
        return False
    if f.default is not dataclasses.MISSING:
        return bool(value == f.default) and type(value) is type(f.default)
    if f.default_factory is not dataclasses.MISSING:
        return bool(value == f.default_factory())
    return False


def from_jsonable(cls: type[T], data: Any) -> T:
    """Rebuild a dataclass from `to_jsonable` output, guided by its type hints.

    Unknown keys are ignored (derived fields, or a newer writer's); missing keys take defaults.
    """
    return typing.cast(T, _convert(cls, data))


class FieldError(ValueError):
    """A value that cannot be read, and where it is (`modes[0].latency.n`)."""

    def __init__(self, path: tuple[str | int, ...], reason: str) -> None:
        super().__init__(reason)
        self.path, self.reason = path, reason

    def within(self, key: str | int) -> FieldError:
        return FieldError((key, *self.path), self.reason)

    def __str__(self) -> str:
        where = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in self.path)
        return f"{where.lstrip('.')}: {self.reason}" if where else self.reason


def _at(key: str | int, convert: Callable[[], Any]) -> Any:
    """`convert()`, with `key` added to the place named by any error it raises."""
    try:
        return convert()
    except FieldError as exc:
        raise exc.within(key) from None
    except (TypeError, ValueError) as exc:
        raise FieldError((key,), str(exc)) from None


def _convert(tp: Any, data: Any) -> Any:
    if data is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return _convert_union(tp, data)
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            items = _as_list(data)
            return tuple(_at(i, lambda v=v: _convert(args[0], v)) for i, v in enumerate(items))
        items = _as_list(data)
        if len(items) != len(args):
            raise ValueError(f"expected {len(args)} items, got {len(items)}")
        return tuple(
            _at(i, lambda a=a, v=v: _convert(a, v))
            for i, (a, v) in enumerate(zip(args, items, strict=True))
        )
    if origin is dict:
        key_tp, val_tp = typing.get_args(tp)
        if not isinstance(data, dict):
            raise TypeError(f"expected an object, got {type(data).__name__}")
        return {
            _convert(key_tp, k): _at(str(k), lambda v=v: _convert(val_tp, v))
            for k, v in data.items()
        }
    if dataclasses.is_dataclass(tp):
        return _convert_dataclass(tp, data)
    return _convert_scalar(tp, data)


def _convert_union(tp: Any, data: Any) -> Any:
    options = [a for a in typing.get_args(tp) if a is not type(None)]
    if len(options) == 1:  # X | None: X's own error says more than the union's
        return _convert(options[0], data)
    for option in options:
        try:
            return _convert(option, data)
        except (TypeError, ValueError):
            continue
    raise ValueError(f"cannot read {_short(data)} as {tp}")


def _short(data: Any) -> str:
    text = repr(data)
    return text if len(text) <= 60 else text[:57] + "..."


def _convert_dataclass(tp: Any, data: Any) -> Any:
    if not isinstance(data, dict):
        raise TypeError(f"expected an object for {tp.__name__}, got {type(data).__name__}")
    hints = _type_hints(tp)
    kwargs = {
        f.name: _at(f.name, lambda f=f: _convert(hints[f.name], data[f.name]))
        for f in dataclasses.fields(tp)
        if f.name in data
    }
    missing = [
        f.name
        for f in dataclasses.fields(tp)
        if f.name not in data
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ValueError(f"{tp.__name__} without {', '.join(missing)}")
    return tp(**kwargs)


@functools.cache
def _type_hints(tp: type) -> dict[str, Any]:
    """A record's resolved field types, once per class: resolving them is most of the time of
    reading a large file (a profile's event trees hold thousands of records)."""
    return typing.get_type_hints(tp)


def _convert_scalar(tp: Any, data: Any) -> Any:
    if tp is float:
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise TypeError(f"expected a number, got {_short(data)}")
        return float(data)
    if tp is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise TypeError(f"expected an integer, got {_short(data)}")
        return data
    if tp is bool:
        if not isinstance(data, bool):
            raise TypeError(f"expected true/false, got {_short(data)}")
        return data
    if tp is str or (isinstance(tp, type) and issubclass(tp, enum.Enum)):
        if not isinstance(data, str):
            raise TypeError(f"expected a string, got {_short(data)}")
        return data if tp is str else coerced(tp, data)
    return data


def _as_list(data: Any) -> list[Any]:
    if not isinstance(data, list):
        raise TypeError(f"expected a list, got {type(data).__name__}")
    return data


def dumps(record: Any, indent: int | None = 2, compact: bool = False) -> str:
    """A record as JSON text (NaN and infinity refused: JSON has neither); `compact` without
    whitespace and without the fields that hold their defaults."""
    separators = (",", ":") if indent is None else None
    data = to_jsonable(record, compact)
    return json.dumps(data, indent=indent, separators=separators, allow_nan=False)


def message_to_json(record: Any, compact: bool = False) -> str:
    """A record as JSON text for another process of this same advisor (a worker's task or
    result: no schema version, both ends run this code); `compact` without whitespace, for
    large ones."""
    separators = (",", ":") if compact else None
    return json.dumps(to_jsonable(record), separators=separators)


def message_from_json(cls: type[T], text: str) -> T:
    """A `cls` from the text `message_to_json` wrote."""
    return from_jsonable(cls, json.loads(text))


def load_versioned(cls: type[T], text: str, version: int, what: str, older_hint: str) -> T:
    """Parse a `what` document whose `schema_version` is `version`; a one-line ValueError when
    it is not one this advisor can read (not JSON, no version, another version, a field of the
    wrong type). An older version's message adds `older_hint` (what to do about it)."""

    def unsupported(found: object) -> str:
        older = isinstance(found, int) and not isinstance(found, bool) and found < version
        hint = f" ({older_hint})" if older else ""
        return (
            f"{what} schema version {found!r} is not supported: this advisor reads version "
            f"{version}{hint}"
        )

    return load_versioned_json(cls, text, what, "schema_version", version, unsupported)


def load_versioned_json(
    cls: type[T],
    text: str,
    what: str,
    key: str,
    version: int,
    unsupported: Callable[[object], str],
) -> T:
    """Parse a `what` document that holds its version under `key`, as a `cls`. Each way it can
    be unreadable is a one-line ValueError: not JSON; "not an advisor {what} (no {key})";
    `unsupported(found)` for a version other than `version`; "malformed {what}: ..." for a
    field of the wrong type. Each document words its version message itself (what to do
    about it differs)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict) or key not in data:
        raise ValueError(f"not an advisor {what} (no {key})")
    if data[key] != version:
        raise ValueError(unsupported(data[key]))
    try:
        return from_jsonable(cls, data)
    except (TypeError, ValueError, KeyError) as exc:
        raise ValueError(f"malformed {what}: {exc}") from None
