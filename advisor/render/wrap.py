"""Plain-text wrapping that never breaks a code span, an identifier, a path or a number.

A line breaks only at a space outside backticks: a code span (`torch._dynamo.config.x = True`)
is one unit with the punctuation glued to it, and a unit that does not fit where the line has
got to starts a line of its own, whole. Only a unit wider than a whole line (a path deeper than
the terminal is wide) is folded, so that no line is wider than the width.
"""

from __future__ import annotations

import re

# A unit: characters up to a space, where a backtick span may hold spaces. An unclosed
# backtick is an ordinary character. A no-break space (U+00A0) glues what it joins.
_UNIT = re.compile(r"(?:[^ \t\n`]|`[^`]*`|`)+")
_GLUE = "\u00a0"
# a number and its unit ("0.0330 ms/call", "1.2 s"), and an interval ("[0.0320, 0.0340]")
_NUMBER_UNIT = re.compile(r"(\d) (?=(?:ms|s|µs|MiB|KiB|B)\b)")
_INTERVAL = re.compile(r"\[[-+\d.,% ]+\]")


def units(text: str) -> list[str]:
    glued = _NUMBER_UNIT.sub(rf"\1{_GLUE}", text)
    glued = _INTERVAL.sub(lambda m: m.group().replace(" ", _GLUE), glued)
    return [u.replace(_GLUE, " ") for u in _UNIT.findall(glued)]


def wrap(text: str, width: int, first: str = "", rest: str | None = None) -> list[str]:
    """`text` in lines of at most `width` columns (where no unit is wider), the first line
    after `first` and the others after `rest` (as wide as `first` in spaces by default)."""
    rest = " " * len(first) if rest is None else rest
    lines: list[str] = []
    line, prefix = "", first
    for unit in units(text):
        candidate = f"{line} {unit}" if line else unit
        if line and len(prefix) + len(candidate) > width:
            lines.append(prefix + line)
            line, prefix = unit, rest
        else:
            line = candidate
        room = max(width - len(prefix), 1)
        while len(line) > room:  # a unit wider than a whole line: folded, the only break
            lines.append(prefix + line[:room])
            line, prefix = line[room:], rest
            room = max(width - len(prefix), 1)
    lines.append(prefix + line)
    return lines


def one_line(text: str, width: int, first: str = "") -> str:
    """`text` cut to one line at a space, with "…" where it was cut (the full text is in
    report.md)."""
    lines = wrap(text, width - 2, first)
    return lines[0] + (" …" if len(lines) > 1 else "")
