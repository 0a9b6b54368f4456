"""The what-ifs besides config knobs, each a `Variant` to measure against the default mode:

- placements (see `placement`): regional compilation of the largest break-free sub-modules, and
  `torch.compiler.disable` on the functions that hold the breaks;
- side effects made no-ops (`print`, a logger method, `warnings.warn`) in the variant's compile
  and calls: what deleting the call saves, measured (moving it out of the compiled function
  keeps the call's own time, which the judge takes from the profile).
"""

from __future__ import annotations

import builtins
import contextlib
import logging
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from advisor.core.model import BreakSite, CodeUnit, Location, Patch, WhatIf
from advisor.measure import harness, placement, torch_adapter
from advisor.measure.patching import InstalledPatch, NotInstallable, SetOption
from advisor.measure.rewrite.option import KIND as OPTION_KIND
from advisor.measure.whatif import Variant
from advisor.measure.workload import Workload

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LOGGER_METHODS = ("debug", "info", "warning", "error", "exception", "critical", "log")
NOOPS = ("print", "warn", *(f"logger:{m}" for m in _LOGGER_METHODS))


def variant_key(kind: str, noop: str | None = None) -> str:
    """How a placement or no-op what-if is named in the records (`WhatIf.knob`)."""
    if noop:
        return f"noop:{noop}"
    return "undisable" if kind == "undisable" else f"placement:{kind}"


def variant_record(
    kind: str, targets: tuple[BreakSite, ...], noop: str | None = None, status: str = "measured"
) -> WhatIf:
    ids = tuple(t.id for t in targets)
    fix = "delete" if noop else ("rewrite" if kind == "undisable" else "placement")
    return WhatIf(variant_key(kind, noop), kind, fix, status, ids, kind=kind)


def regional_variant(workload: Workload, targets: list[BreakSite]) -> Variant | None:
    """The largest break-free sub-modules compiled in place, the rest eager; None when the
    workload reaches no module, or no part of it compiles clean on its own."""
    regions = _regions(workload)
    if not regions:
        return None
    record = replace(
        variant_record("regional", tuple(targets)),
        subjects=placement.region_units(regions),
    )
    return Variant(record, regions_call(regions))


def regions_call(regions: list[tuple[str, Any]]) -> Callable[[Workload, Any], Callable[[], Any]]:
    """A variant's `make_call`: these modules compiled in place, the workload's own callable
    run eagerly around them."""

    def make_call(workload: Workload, backend: Any) -> Callable[[], Any]:
        installed = placement.CompiledRegions(regions, backend)

        def call() -> Any:
            with installed:
                return workload()

        return call

    return make_call


def _regions(workload: Workload) -> list[tuple[str, Any]]:
    """The break-free modules worth compiling, found from one eager call and probes; on a
    training step what those calls changed is put back, so the arm starts as built."""
    roots = placement.module_roots(workload)
    if not roots:
        return []
    optimizers = list(placement.optimizers_held(workload).values())
    kept = (
        torch_adapter.training_state_kept(list(roots.values()), optimizers)
        if optimizers
        else contextlib.nullcontext()
    )
    with kept:
        recorded = placement.record_calls(workload, roots)
        return placement.clean_regions(roots, recorded, placement.roots_compiled(workload))


def split_variant(workload: Workload, targets: list[BreakSite]) -> Variant | None:
    """A training step split the way users write it: the model compiled in place
    (`model.compile()`, breaks and all), each optimizer's step compiled on its own
    (`opt.step = torch.compile(opt.step)`), and the step itself (backward included) run eagerly;
    None without an optimizer or a module. Not the break-free regions: where the model has
    breaks, compiling only its clean parts is a different placement ("regional")."""
    optimizers = placement.optimizers_held(workload)
    modules = list(placement.module_roots(workload).items()) if optimizers else []
    if not modules:
        return None
    steps = tuple(
        CodeUnit(f"{name}.step", type(opt).__qualname__) for name, opt in optimizers.items()
    )
    record = replace(
        variant_record("split", tuple(targets)),
        subjects=placement.region_units(modules) + steps,
    )

    def make_call(workload: Workload, backend: Any) -> Callable[[], Any]:
        compiled = placement.CompiledRegions(modules, backend)
        optimizer_steps = placement.CompiledOptimizers(optimizers, backend)

        def call() -> Any:
            with compiled, optimizer_steps:
                return workload()

        return call

    return Variant(record, make_call)


def disable_variant(
    workload: Workload, sites: tuple[BreakSite, ...], targets: list[BreakSite]
) -> Variant | None:
    """`torch.compiler.disable` on the smallest function holding each break, the rest compiled
    as in the default mode; None when no such function can be found."""
    found = placement.functions_holding(sites, workload)
    if not found:
        return None
    disabled = torch_adapter.DisabledFrames([fn for _, fn in found])
    record = replace(
        variant_record("disable", tuple(targets)),
        subjects=tuple(dict.fromkeys(unit for unit, _ in found)),
    )
    return Variant(record, _compiled_within(lambda: disabled))


def noop_variant(noop: str, targets: list[BreakSite]) -> Variant:
    """`noop` ("print", "warn" or "logger:<method>") made a no-op while compiling and calling."""
    return Variant(
        variant_record("noop", tuple(targets), noop), _compiled_within(lambda: silenced(noop))
    )


def _compiled_within(
    context: Callable[[], contextlib.AbstractContextManager[Any]],
) -> Callable[[Workload, Any], Callable[[], Any]]:
    """A variant's `make_call`: the workload compiled as in the default mode, and each call (the
    first compiles) made inside `context()`, asked for anew each time because a generator-based
    context manager can be entered only once."""

    def make_call(workload: Workload, backend: Any) -> Callable[[], Any]:
        compiled = harness.compiled_call(workload, backend, False)

        def call() -> Any:
            with context():
                return compiled()

        return call

    return make_call


@contextlib.contextmanager
def silenced(noop: str) -> Iterator[None]:
    owner, name = _target(noop)
    original = getattr(owner, name)
    setattr(owner, name, _nothing)
    try:
        yield
    finally:
        setattr(owner, name, original)


def _target(noop: str) -> tuple[Any, str]:
    if noop == "print":
        return builtins, "print"
    if noop == "warn":
        return warnings, "warn"
    if noop.startswith("logger:"):
        return logging.Logger, noop.split(":", 1)[1]
    raise ValueError(f"unknown no-op {noop!r}")


def _nothing(*_args: Any, **_kwargs: Any) -> None:
    return None


def undisable_variant(targets: list[BreakSite]) -> Variant | None:
    """The `torch.compiler.disable` boundaries at these breaks removed (each wrapper replaced
    by the function it wraps, where its call line names it): what tracing the body saves; None
    when no wrapper is found."""
    names = {name for site in targets for name in _IDENTIFIER.findall(site.where.code)}
    wrappers = torch_adapter.disabled_wrappers(names)
    if not wrappers:
        return None
    enabled = torch_adapter.EnabledFrames(wrappers)
    record = replace(variant_record("undisable", tuple(targets)), fix="rewrite")
    return Variant(record, _compiled_within(lambda: enabled))


def patch_record(patch: Patch, targets: tuple[BreakSite, ...], status: str = "measured") -> WhatIf:
    """How a patch what-if is named in the records: by its kind and the line it rewrites."""
    ids = tuple(t.id for t in targets)
    lines = "+".join(str(part.line) for part in patch.parts) or str(patch.line)
    key = f"patch:{patch.kind}@{lines}"
    subject = CodeUnit(patch.edits[0].qualname, patch.edits[0].qualname.rsplit(".", 1)[-1])
    where = Location(patch.file, patch.edits[0].first_line, subject.path)
    return WhatIf(
        key,
        patch.kind,
        "rewrite",
        status,
        ids,
        kind="patch",
        patch=patch,
        subjects=(replace(subject, where=where),),
    )


def patch_variant(patch: Patch, targets: list[BreakSite]) -> Variant:
    """The user's function(s) rewritten as the patch says, installed around each compile and
    call (the file on disk untouched). Where it cannot be installed (its function not loaded,
    its text not compiling in place), building the call raises and the what-if fails with
    that one-line reason."""
    record = patch_record(patch, tuple(targets))
    try:
        installed: InstalledPatch | SetOption = (
            SetOption(patch) if patch.kind == OPTION_KIND else InstalledPatch(patch)
        )
    except NotInstallable as exc:
        reason = exc

        def not_installable(workload: Workload, backend: Any) -> Callable[[], Any]:
            raise reason

        return Variant(record, not_installable)
    return Variant(record, _compiled_within(lambda: installed))
