"""Source patches for graph breaks in the user's own code (torch-free: `ast` and text only).

`patch_for(file, line, category)` reads the file, finds the innermost function whose body holds
the break's line and the statement there, and tries the rewriters (the category's own first):
`side_effect` (delete a print/logging call), `scalar_bookkeeping` (`.item()`/`.tolist()`
bookkeeping moved into a `torch.compiler.disable`d nested helper), `late_scalar` (a scalar
that is only returned, converted at the return), `kept_tensor` (a `.tolist()` stored on an
object, kept a tensor), `tensor_branch` (`if` on a
tensor as `torch.where`), `mask_gather` (a nonzero/boolean-mask gather as a masked where),
`compile_boundary` (drop `graph_break()` and `torch.compiler.disable`). The first that applies
gives the `Patch`; otherwise a `Refusal` says why in one line. The edit replaces only the lines
it changes; everything else stays as written.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path

from advisor.core.patch import PATCH_KINDS, Patch
from advisor.core.paths import is_installed
from advisor.measure.rewrite.boundary import rewrite_compile_boundary
from advisor.measure.rewrite.branches import rewrite_tensor_branch
from advisor.measure.rewrite.build import build_patch
from advisor.measure.rewrite.combine import combine
from advisor.measure.rewrite.conditional import rewrite_tensor_cond
from advisor.measure.rewrite.expressions import brief
from advisor.measure.rewrite.kept_tensor import rewrite_kept_tensor
from advisor.measure.rewrite.late_scalar import rewrite_late_scalar
from advisor.measure.rewrite.locate import Site, locate, statements_at
from advisor.measure.rewrite.masks import rewrite_mask_gather
from advisor.measure.rewrite.outcome import Refusal, Rewrite
from advisor.measure.rewrite.scalars import rewrite_scalar_bookkeeping
from advisor.measure.rewrite.side_effects import rewrite_side_effect
from advisor.measure.rewrite.source import Source, read_source

__all__ = ["CATEGORY_KINDS", "Refusal", "alternative_patches", "combined_patch", "patch_for"]

Rewriter = Callable[[Site], Rewrite | Refusal | None]

REWRITERS: dict[str, Rewriter] = {
    "side_effect": rewrite_side_effect,
    "scalar_bookkeeping": rewrite_scalar_bookkeeping,
    "late_scalar": rewrite_late_scalar,
    "tensor_branch": rewrite_tensor_branch,
    "mask_gather": rewrite_mask_gather,
    "compile_boundary": rewrite_compile_boundary,
    "tensor_cond": rewrite_tensor_cond,
    "kept_tensor": rewrite_kept_tensor,
}
# A patch whose cost the measurement must weigh against another form of the same fix: an `if`
# as torch.where runs both branches, as torch.cond only the one taken.
ALTERNATIVES = {"tensor_branch": ("tensor_cond",)}
CATEGORY_KINDS = {  # the break's category -> the rewriter tried first
    "print": "side_effect",
    "logging": "side_effect",
    "scalar_extraction": "scalar_bookkeeping",
    "data_dependent_branch": "tensor_branch",
    "dynamic_shape": "mask_gather",
    "explicit": "compile_boundary",
    "disabled": "compile_boundary",
}
ADVISOR_DIR = Path(__file__).resolve().parents[2]  # rewrite -> measure -> advisor
NOT_USERS_CODE = Refusal("not the user's code")


def patch_for(file: str, line: int, category: str) -> Patch | Refusal:
    """A patch for the break at `file`:`line`, or why there is none."""
    if not _users_code(file):
        return NOT_USERS_CODE
    site = _site_at(file, line)
    if isinstance(site, Refusal):
        return site
    first_refusal: Refusal | None = None
    candidates = _candidates(site)
    for kind in _order(category):
        outcome = _rewritten(kind, candidates)
        if isinstance(outcome, Patch):
            return outcome
        first_refusal = first_refusal or outcome
    assert site.statement is not None
    return first_refusal or Refusal(f"no rewrite applies to `{brief(site.source, site.statement)}`")


def alternative_patches(first: Patch) -> list[Patch]:
    """Other forms of `first`'s fix at the same line (`ALTERNATIVES`), each measured too."""
    site = _site_at(first.file, first.line)
    if isinstance(site, Refusal):
        return []
    candidates = _candidates(site)
    found = [_rewritten(kind, candidates) for kind in ALTERNATIVES.get(first.kind, ())]
    return [patch for patch in found if isinstance(patch, Patch)]


def combined_patch(patches: list[Patch]) -> Patch | Refusal:
    """The line patches of one file (`REWRITERS` kinds, distinct lines) applied together."""
    return combine(patches, _rewritten_in)


def _rewritten_in(source: Source, line: int, kind: str) -> Patch | Refusal | None:
    site = _site_in(source, line)
    return site if isinstance(site, Refusal) else _rewritten(kind, _candidates(site))


def _site_at(file: str, line: int) -> Site | Refusal:
    """The file read and the break's line located, with a statement there."""
    source = read_source(file)
    if isinstance(source, Refusal):
        return source
    return _site_in(source, line)


def _site_in(source: Source, line: int) -> Site | Refusal:
    site = locate(source, line)
    if isinstance(site, Refusal):
        return site
    if site.statement is None:
        return Refusal(f"line {line} holds no statement")
    return site


def _candidates(site: Site) -> list[Site]:
    """The site once per statement its line holds (`if C: x = y` is the `if` and its body)."""
    return [dataclasses.replace(site, statement=s) for s in statements_at(site)]


def _rewritten(kind: str, candidates: list[Site]) -> Patch | Refusal | None:
    """The first patch the `kind` rewriter gives over the candidates, else its first refusal
    (None: not its pattern)."""
    first_refusal: Refusal | None = None
    for candidate in candidates:
        outcome = REWRITERS[kind](candidate)
        if isinstance(outcome, Rewrite):
            outcome = build_patch(candidate, outcome)
            if isinstance(outcome, Patch):
                return outcome
        if isinstance(outcome, Refusal) and first_refusal is None:
            first_refusal = outcome
    return first_refusal


def _order(category: str) -> list[str]:
    """The line rewriters, the category's own first (`setup_hoist` is not one: it is planned
    from a library break's stack, `hoist.hoist_patch_for`)."""
    first = CATEGORY_KINDS.get(category)
    rest = [kind for kind in PATCH_KINDS if kind != first and kind in REWRITERS]
    return ([first] if first else []) + rest


def _users_code(file: str) -> bool:
    if is_installed(file):
        return False
    try:
        inside = os.path.commonpath([os.path.realpath(file), str(ADVISOR_DIR)]) == str(ADVISOR_DIR)
    except ValueError:  # another drive (Windows)
        inside = False
    return not inside
