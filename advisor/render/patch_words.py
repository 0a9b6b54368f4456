"""The words for a generated patch: what it does, and what it changes that comparing outputs
cannot show."""

from __future__ import annotations

from dataclasses import replace

from advisor.core.model import Patch
from advisor.core.patch import PatchPart


def patch_summary(patch: Patch) -> str:
    """What the patch does, in a few words."""
    names = [f"`{n}`" for n in patch.names]
    first = names[0] if names else "it"
    if patch.kind == "side_effect":
        return f"remove the {first} call from the compiled code"
    if patch.kind == "scalar_bookkeeping":
        return (
            f"update {first} in a `torch.compiler.disable`d helper, once per call after the "
            "compiled work (tensors collected in the loop)"
        )
    if patch.kind == "late_scalar":
        return f"keep {first} a tensor until the return, converted there after the tensor work"
    if patch.kind == "kept_tensor":
        return f"keep {first} a tensor, converted where it is read, not inside the compiled call"
    if patch.kind == "tensor_branch":
        return "the `if` on a tensor value as `torch.where`"
    if patch.kind == "tensor_cond":
        return "the `if` on a tensor value as `torch.cond` (only the branch taken runs)"
    if patch.kind == "mask_gather":
        return f"the rows selected by {first} as a `torch.where` over every row (static shapes)"
    if patch.kind == "compile_boundary":
        return "the compile boundary removed, so its body compiles with the rest"
    if patch.kind == "library_option":
        return option_summary(patch)
    if patch.kind == "combined":
        return "; and ".join(patch_summary(_as_patch(patch, part)) for part in patch.parts)
    if patch.kind == "setup_hoist":
        kept = f"`{patch.names[1]}`" if len(patch.names) > 1 else "an attribute"
        return f"build {first} once in `__init__` (kept as {kept}), not on every call"
    return "a rewrite of the line"


def _as_patch(patch: Patch, part: PatchPart) -> Patch:
    """One part of a combined patch, for its words (its own kind, line and names)."""
    return replace(patch, kind=part.kind, line=part.line, names=part.names, parts=())


def patch_caveat(patch: Patch) -> str | None:
    """What the patch changes besides speed, which comparing outputs cannot show."""
    if patch.kind == "combined":
        caveats = [patch_caveat(_as_patch(patch, part)) for part in patch.parts]
        return "; ".join(c for c in caveats if c) or None
    first = f"`{patch.names[0]}`" if patch.names else "the state"
    if patch.kind == "side_effect":
        return "the call no longer runs inside the compiled function: log from its outputs"
    if patch.kind == "scalar_bookkeeping":
        return f"{first} is updated after the loop, not chunk by chunk, and outside the graph"
    if patch.kind == "kept_tensor":
        return f"{first} holds a tensor, not Python numbers: call `.tolist()` where it is read"
    if patch.kind == "library_option" and len(patch.names) > 1:
        return (
            f"`{patch.names[0]}={patch.names[1]}` is what the library worked out from this "
            "run's inputs: pass the value your data has (the library's docs say what it means)"
        )
    if patch.kind == "setup_hoist":
        return (
            f"{first} is built from the values it had when the object was made: rebuild it "
            "where those values change"
        )
    return None


def option_summary(patch: Patch) -> str:
    """`pass diameter= to SamplesLoss`: a library option (names: the argument, the value the
    library worked out here, the class that takes it)."""
    name, value, owner = (*patch.names, "", "", "")[:3]
    return (
        f"pass `{name}=` to `{owner}` where you build it (here `{name}={value}`): the library "
        f"works `{name}` out from the inputs on every call when it is None"
    )


def patch_without_diff(patch: Patch) -> str:
    """Why a patch shows no diff (other than --redact)."""
    if patch.kind == "library_option":
        return "no diff: the change is an argument where your code builds the library's object"
    return "no diff"
