"""User-facing errors: one line, non-zero exit, no traceback (unless --debug)."""

from __future__ import annotations

import shlex


class AdvisorError(Exception):
    """A problem with the user's input or environment, reported as one line."""

    exit_code = 2


def first_line(exc: BaseException) -> str:
    """An exception's message cut to its first line, for one-line reports."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"


def one_line(text: str) -> str:
    """Text for a one-line message: line breaks inside it (a target or path given with one)
    are shown escaped, not broken."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


class RenderFailed(AdvisorError):
    """Judging or rendering failed after the measurements were saved: one line naming the
    failure and the command that renders the saved measurements again (exit 1: an advisor
    bug, not bad input)."""

    exit_code = 1

    def __init__(self, cause: BaseException, folder: object) -> None:
        command = f"advisor judge {shlex.quote(str(folder))}"
        super().__init__(
            f"judging or rendering failed ({type(cause).__name__}: {first_line(cause)}); "
            f"the measurements are saved in {folder}/measurements.json: run {command} "
            "to render them again"
        )
