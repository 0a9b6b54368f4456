"""Source paths: whose code a file is, and how to show it to a person.

Reports keep absolute paths; only renderers shorten them. Installed code (site-packages, the
standard library) is shown package-relative (`transformers/models/x/modeling_x.py`), the user's
own code relative to the workload's folder. Pure string logic: it runs where a report is read,
which need not be the machine that measured it.
"""

from __future__ import annotations

import os
import re

_INSTALLED = re.compile(r"[/\\](?:site|dist)-packages[/\\](?P<rest>.+)$")
_STDLIB = re.compile(r"[/\\]lib[/\\]python\d+(?:\.\d+)?[/\\](?P<rest>.+)$")


def is_installed(path: str | None) -> bool:
    """Code the user did not write: installed packages (torch included), the standard library,
    and synthetic frames (`<string>`, `<frozen ...>`)."""
    if not path:
        return False
    return path.startswith("<") or bool(_INSTALLED.search(path) or _STDLIB.search(path))


def package_relative(path: str) -> str | None:
    """`.../site-packages/transformers/x.py` -> `transformers/x.py`; None for user code."""
    match = _INSTALLED.search(path) or _STDLIB.search(path)
    return match.group("rest").replace("\\", "/") if match else None


def display_path(path: str | None, base: str | None = None) -> str:
    """How a person reads a location: package-relative for installed code, relative to `base`
    (the workload's folder) for the user's own code when it lies below it, else as given."""
    if not path:
        return "?"
    if path.startswith("<"):
        return path
    installed = package_relative(path)
    if installed is not None:
        return installed
    if base:
        try:
            rel = os.path.relpath(path, base)
        except ValueError:  # another drive (Windows)
            return path
        if not rel.startswith(".."):
            return rel.replace("\\", "/")
    return path


def common_folder(paths: list[str]) -> str | None:
    """The deepest folder holding every user (not installed) path, to show paths relative to."""
    mine = [os.path.dirname(p) for p in paths if p and not is_installed(p)]
    if not mine:
        return None
    try:
        return os.path.commonpath(mine)
    except ValueError:
        return None
