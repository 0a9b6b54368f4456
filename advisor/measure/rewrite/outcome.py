"""What a rewriter answers: a `Rewrite` (line edits to one function), a `Refusal` (the pattern is
there but has no safe rewrite, said in one line a user can read), or None (not its pattern)."""

from __future__ import annotations

import ast
from dataclasses import dataclass

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Refusal:
    """Why no patch is written for a break, in one line a user can read."""

    reason: str


SHARED_LINE = Refusal("the statement shares its line with other code, so it cannot be cut alone")


@dataclass(frozen=True)
class LineEdit:
    """Lines `first`..`last` (1-based, inclusive) of the file replaced by `lines` (no line
    endings); `last == first - 1` inserts `lines` before line `first`."""

    first: int
    last: int
    lines: tuple[str, ...]

    @property
    def is_insertion(self) -> bool:
        return self.last < self.first


@dataclass(frozen=True)
class Rewrite:
    """One rewriter's edit of one function. `uses_torch`: the new code names torch (an
    `import torch` is added to the function when the module does not bind it)."""

    kind: str
    function: FunctionNode
    edits: tuple[LineEdit, ...]
    names: tuple[str, ...]
    uses_torch: bool = False
    unwrap: bool = False
    # lines of the patched file where the rewrite leaves a break on purpose (moved to the end)
    intended_breaks: tuple[int, ...] = ()
