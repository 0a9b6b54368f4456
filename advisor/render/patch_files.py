"""`--write-patches DIR`: each generated patch as a `.patch` file that `git apply` (or
`patch -p1`) accepts in the folder it is meant for.

A patch's paths are relative to the git work tree holding the patched file (the folder
`git apply` takes paths from, whatever subfolder it runs in), or to the current folder when
the file is in no git work tree. Files are written whole and never over an existing one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from advisor.core.errors import AdvisorError
from advisor.core.kinds import WhatIfKind
from advisor.core.model import Report
from advisor.render.view_patches import patch_file_name, patch_file_text


@dataclass(frozen=True)
class WrittenPatch:
    path: Path  # the .patch file
    apply_in: str  # the folder to run `git apply` / `patch -p1` in


def check_patch_dir(folder: Path) -> None:
    """Fail before measuring when patches could not go there: a file, not a folder, or a
    folder that already holds .patch files (never overwritten)."""
    if folder.exists() and not folder.is_dir():
        raise AdvisorError(f"--write-patches: {folder} exists and is not a folder")
    if folder.is_dir() and any(folder.glob("*.patch")):
        raise AdvisorError(
            f"--write-patches: {folder} already holds .patch files; choose another folder "
            "(never overwritten)"
        )


def write_patches(report: Report, folder: Path) -> list[WrittenPatch]:
    """Every patch of the report into `folder` (made if missing)."""
    patched = [
        w.patch
        for w in report.what_ifs
        if w.kind == WhatIfKind.PATCH
        and w.patch is not None
        and not w.patch.redacted
        and w.patch.hunks  # an argument passed to a library: no file of the user's to patch
    ]
    if not patched:
        return []
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for index, patch in enumerate(patched, 1):
        apply_in = work_tree(patch.file) or os.getcwd()
        path = folder / patch_file_name(index, patch)
        with open(path, "x", encoding="utf-8") as out:  # "x": never over an existing file
            out.write(patch_file_text(patch, apply_in))
        written.append(WrittenPatch(path, apply_in))
    return written


def work_tree(file: str) -> str | None:
    """The git work tree holding `file` (the nearest folder above it with a `.git`)."""
    folder = os.path.dirname(os.path.abspath(file))
    while True:
        if os.path.exists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent
