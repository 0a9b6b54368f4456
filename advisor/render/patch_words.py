"""The words for a generated patch: what it does, and what it changes that comparing outputs
cannot show."""

from __future__ import annotations

from advisor.core.model import Patch


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
    if patch.kind == "tensor_branch":
        return "the `if` on a tensor value as `torch.where`"
    if patch.kind == "tensor_cond":
        return "the `if` on a tensor value as `torch.cond` (only the branch taken runs)"
    if patch.kind == "mask_gather":
        return f"the rows selected by {first} as a `torch.where` over every row (static shapes)"
    if patch.kind == "compile_boundary":
        return "the compile boundary removed, so its body compiles with the rest"
    if patch.kind == "setup_hoist":
        kept = f"`{patch.names[1]}`" if len(patch.names) > 1 else "an attribute"
        return f"build {first} once in `__init__` (kept as {kept}), not on every call"
    return "a rewrite of the line"


def patch_caveat(patch: Patch) -> str | None:
    """What the patch changes besides speed, which comparing outputs cannot show."""
    first = f"`{patch.names[0]}`" if patch.names else "the state"
    if patch.kind == "side_effect":
        return "the call no longer runs inside the compiled function: log from its outputs"
    if patch.kind == "scalar_bookkeeping":
        return f"{first} is updated after the loop, not chunk by chunk, and outside the graph"
    if patch.kind == "setup_hoist":
        return (
            f"{first} is built from the values it had when the object was made: rebuild it "
            "where those values change"
        )
    return None
