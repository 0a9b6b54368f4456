"""Argument types for the command line: a number, checked, or a one-line reason why not."""

from __future__ import annotations

import argparse
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
