"""User-facing errors: one line, non-zero exit, no traceback (unless --debug)."""

from __future__ import annotations


class AdvisorError(Exception):
    """A problem with the user's input or environment, reported as one line."""

    exit_code = 2
