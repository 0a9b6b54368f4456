"""Argument types for the command line: a number, checked, or a one-line reason why not."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable


def number(accept: Callable[[float], bool], wording: str) -> Callable[[str], float]:
    """A parser for a float that `accept` takes; otherwise 'must be {wording} (got ...)'."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
        if not accept(value):
            raise argparse.ArgumentTypeError(f"must be {wording} (got {text})")
        return value

    return parse


positive = number(lambda v: v > 0, "positive")
non_negative = number(lambda v: v >= 0, "zero or more")
fraction = number(lambda v: 0 <= v < 1, "a fraction from 0 up to 1")
share = number(lambda v: 0 <= v < 1, "a share in [0, 1), e.g. 0.02")


def int_at_least(minimum: int, wording: str) -> Callable[[str], int]:
    """A parser for an integer of at least `minimum`; otherwise 'must be {wording} (got ...)'."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {wording} (got {value})")
        return value

    return parse


def key_value(text: str) -> tuple[str, object]:
    """`KEY=VALUE` with KEY a Python name; VALUE read as JSON when it parses, else the text."""
    key, sep, raw = text.partition("=")
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"'{text}' is not KEY=VALUE with KEY a Python name")
    try:
        value: object = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key, value
