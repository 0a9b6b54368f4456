"""The patches a run generated for breaks in the user's code, each as a unified diff beside what
measuring it found.

A diff's header names the file relative to a base folder: the report's own display path in
report.md / report.html / report.json (the base is the workload's folder, so the text reads the
same wherever the report is opened), and the path from the folder the patch is applied in for
`--write-patches` (`patch_file_text`), so `git apply` / `patch -p1` accept it there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from advisor.core.kinds import WhatIfKind
from advisor.core.model import Patch, Report, WhatIf
from advisor.render import prose
from advisor.render.actions import what_if_label
from advisor.render.formatting import Display
from advisor.render.patch_words import patch_caveat, patch_without_diff


@dataclass(frozen=True)
class PatchView:
    """One generated patch: what it is, what measuring it found, and its diff."""

    name: str  # a file name for it: `01-side_effect-model.py-42.patch`
    label: str  # what it does, where
    outcome: str  # the what-if line: measured saving, no effect, changed output, failed
    caveat: str | None  # what it changes that comparing outputs cannot show
    diff: str  # unified diff with its header; "" where there is none (see `no_diff`)
    patch: Patch  # the record it shows (a patch action names the same one)
    no_diff: str = ""  # where `diff` is "": why (--redact took it out, or no file of yours)


def patch_views(report: Report, display: Display) -> tuple[PatchView, ...]:
    patched = [w for w in report.what_ifs if w.kind == WhatIfKind.PATCH and w.patch is not None]
    return tuple(_view(i, w, display) for i, w in enumerate(patched, 1))


def _view(index: int, w: WhatIf, display: Display) -> PatchView:
    assert w.patch is not None
    patch = w.patch
    label = what_if_label(w)
    return PatchView(
        name=patch_file_name(index, patch),
        label=label,
        outcome=prose.what_if_line(w).removeprefix(f"{label}: "),
        caveat=patch_caveat(patch),
        diff="" if patch.redacted or not patch.hunks else unified_diff(patch, display(patch.file)),
        patch=patch,
        no_diff=REDACTED_DIFF if patch.redacted else patch_without_diff(patch),
    )


# What a redacted report shows where the diff would be.
REDACTED_DIFF = "the diff is left out: --redact removes source text (a run without it shows it)"


def patch_file_name(index: int, patch: Patch) -> str:
    stem = os.path.basename(patch.file).replace(".", "_")
    return f"{index:02d}-{patch.kind}-{stem}-{patch.line}.patch"


def unified_diff(patch: Patch, path: str) -> str:
    """The patch's hunks under a `git diff`-style header naming `path` (forward slashes)."""
    shown = path.replace("\\", "/")
    return f"--- a/{shown}\n+++ b/{shown}\n{patch.hunks}"


def patch_file_text(patch: Patch, apply_in: str) -> str:
    """The patch as a file for `git apply` / `patch -p1` run in the folder `apply_in`: the path
    in its header is the file's path from there."""
    return unified_diff(patch, os.path.relpath(patch.file, apply_in))
