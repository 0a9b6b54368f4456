"""A source patch for a break in the user's own code: the record of what the patch changes.

The patch is made from the file on disk (an AST transformation of the function that holds the
break, spliced back into the file's text so that comments and layout elsewhere stay), measured
as an arm of its own (the rewritten function installed in the worker, the file left untouched),
and shown as a unified diff. These records hold facts only: which function, its text before and
after, the diff's hunks; `render/` writes the sentences and the diff's header.
"""

from __future__ import annotations

from dataclasses import dataclass

PATCH_KINDS = (
    "side_effect",  # a print / logging / warnings call in the compiled region, removed
    "scalar_bookkeeping",  # .item() / .tolist() into Python state: updated in a disabled helper
    "late_scalar",  # `x = t.item()` only returned: converted at the return, after the tensor work
    "tensor_branch",  # an `if` on a tensor value, as torch.where
    "mask_gather",  # a boolean-mask / nonzero gather feeding elementwise math, as a masked where
    "compile_boundary",  # a graph_break() / torch.compiler.disable boundary the body does not need
    "setup_hoist",  # an object built (or set up) on every call: built once, in `__init__`
    "tensor_cond",  # an `if` on a tensor value, as torch.cond (only the branch taken runs)
    "kept_tensor",  # `obj.attr = t.tolist()` in the compiled call: the attribute kept a tensor
    "combined",  # several of the above in one file, applied together (`Patch.parts`)
    "library_option",  # an argument a library works out when None, passed to its constructor
)


@dataclass(frozen=True)
class FunctionEdit:
    """One function of the user's file as it is on disk and as the patch leaves it.

    `first_line` is the line of the `def`, or of its first decorator (as `co_firstlineno`
    counts it); `before` is the exact text of lines first_line..last_line, `after` the same
    lines rewritten at the same indentation. `unwrap`: the patch removes a decorator that
    wraps the function (`@torch.compiler.disable`), so installing it means calling the wrapped
    function where the wrapper was called.
    """

    qualname: str
    first_line: int
    last_line: int
    before: str
    after: str
    unwrap: bool = False


@dataclass(frozen=True)
class PatchPart:
    """One patch of a `combined` patch: its kind, the break's line and its names."""

    kind: str
    line: int
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Patch:
    """A rewrite of the user's file at one break: its kind (one of PATCH_KINDS), the file
    (absolute path) and the break's line, the functions it edits, and the unified-diff hunks of
    the file (from the first `@@` on; the `---`/`+++` header is the renderer's, since the path
    it names depends on where the patch is applied). `names`: the identifiers the rewrite turns
    on (the call removed, the state kept in a helper, the mask), for the report's sentence."""

    kind: str
    file: str
    line: int
    edits: tuple[FunctionEdit, ...]
    hunks: str
    names: tuple[str, ...] = ()
    # lines of the patched file where the patch leaves a break on purpose (a conversion moved to
    # the return); a break at a `torch.compiler.disable` helper it adds is intended as well
    intended_breaks: tuple[int, ...] = ()
    # `--redact` took the source text out (the edits' text and the hunks): the kind, the file,
    # the line, the functions edited and the names stay, so the report still says what the
    # patch does and what measuring it found, without the diff
    redacted: bool = False
    # kind "setup_hoist": the statements the patch adds to `__init__` (run once on each live
    # instance of the class when the patch is installed in a process that already built it)
    setup: tuple[str, ...] = ()
    # kind "combined": the patches applied together, in order (each alone is measured too: two
    # breaks in one function often pay only once both are gone, the graph staying split at the
    # other)
    parts: tuple[PatchPart, ...] = ()


def lf_text(text: str) -> str:
    """Text with every line ending as "\\n": `textwrap.dedent` does not take "\\r" for
    whitespace, so a CRLF file's blank lines would defeat it."""
    return text.replace("\r\n", "\n").replace("\r", "\n")
