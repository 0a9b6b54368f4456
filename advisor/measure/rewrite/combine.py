"""Patches of one file applied together: each part's rewriter is run again on the text the parts
before it left, at its break's line as it lies there, and the functions they edit are recorded
once, as the file has them and as all the parts leave them.

Why: two breaks in one function often pay only together. Each patch alone leaves the graph
split at the other break, so each measures no effect, while both remove the split (measured on
an attention layer with a data-dependent mask branch and a `.tolist()` kept on the module).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import replace

from advisor.core.patch import FunctionEdit, Patch, PatchPart
from advisor.measure.rewrite.build import compile_refusal
from advisor.measure.rewrite.outcome import Refusal
from advisor.measure.rewrite.source import Source, parse_source, read_source, split_lines
from advisor.measure.rewrite.splice import unified_hunks

KIND = "combined"
# (the file as the parts before left it, the break's line there, the part's kind) -> its patch
RewriteAt = Callable[[Source, int, str], Patch | Refusal | None]


def combine(patches: Sequence[Patch], rewrite_at: RewriteAt) -> Patch | Refusal:
    """The patches (of one file, at distinct lines) as one, or why they cannot be applied
    together (a later part's line rewritten by an earlier part, or its rewrite no longer
    applying to the text the earlier parts left)."""
    original = read_source(patches[0].file)
    if isinstance(original, Refusal):
        return original
    edits = {edit.qualname: edit for edit in patches[0].edits}
    applied: list[tuple[tuple[str, ...], tuple[int, ...]]] = [
        (_lines_with(original, edits), patches[0].intended_breaks)
    ]
    for patch in patches[1:]:
        current = parse_source(original.file, "".join(applied[-1][0]))
        if isinstance(current, Refusal):
            return current
        line = mapped_line(original.lines, current.lines, patch.line)
        if line is None:
            return Refusal(f"line {patch.line} is rewritten by an earlier patch of the set")
        part = rewrite_at(current, line, patch.kind)
        if not isinstance(part, Patch):
            return part or Refusal(f"the {patch.kind} rewrite no longer applies at line {line}")
        for edit in part.edits:
            edits[edit.qualname] = _merged(edits.get(edit.qualname), edit, current, original)
        applied.append((_lines_with(original, edits), part.intended_breaks))
    return _combined(patches, original, edits, applied)


def _combined(
    patches: Sequence[Patch],
    original: Source,
    edits: dict[str, FunctionEdit],
    applied: list[tuple[tuple[str, ...], tuple[int, ...]]],
) -> Patch | Refusal:
    final = applied[-1][0]
    for edit in edits.values():
        refused = compile_refusal(edit.qualname, edit.after, "".join(final))
        if refused is not None:
            return refused
    intended = {
        moved
        for lines, breaks in applied
        for line in breaks
        if (moved := mapped_line(lines, final, line)) is not None
    }
    names = tuple(dict.fromkeys(n for p in patches for n in p.names))
    return Patch(
        kind=KIND,
        file=original.file,
        line=patches[0].line,
        edits=tuple(sorted(edits.values(), key=lambda e: e.first_line)),
        hunks=unified_hunks(original.lines, list(final)),
        names=names,
        intended_breaks=tuple(sorted(intended)),
        parts=tuple(PatchPart(p.kind, p.line, p.names) for p in patches),
    )


def _merged(
    earlier: FunctionEdit | None, edit: FunctionEdit, current: Source, original: Source
) -> FunctionEdit:
    """A function's edit in the original file's terms: an earlier part's edit of it carried on
    (its lines and text as the file has them), or this part's lines mapped back to the file's."""
    if earlier is not None:
        return replace(earlier, after=edit.after, unwrap=earlier.unwrap or edit.unwrap)
    first = mapped_line(current.lines, original.lines, edit.first_line)
    last = mapped_line(current.lines, original.lines, edit.last_line)
    assert first is not None and last is not None  # a function no part edited yet is unchanged
    return replace(edit, first_line=first, last_line=last)


def _lines_with(original: Source, edits: dict[str, FunctionEdit]) -> tuple[str, ...]:
    """The file's lines with each edited function's lines replaced by its new text."""
    lines = list(original.lines)
    for edit in sorted(edits.values(), key=lambda e: e.first_line, reverse=True):
        lines[edit.first_line - 1 : edit.last_line] = split_lines(edit.after)
    return tuple(lines)


def mapped_line(old: Sequence[str], new: Sequence[str], line: int) -> int | None:
    """Where line `line` (1-based) of `old` lies in `new`, or None where it was changed."""
    matcher = difflib.SequenceMatcher(None, list(old), list(new), autojunk=False)
    for a, b, size in matcher.get_matching_blocks():
        if a < line <= a + size:
            return b + (line - a)
    return None
