"""Placements: where `torch.compile` goes, as variants to measure against the default mode.

- regional: compile the largest sub-modules whose own compile has no graph break (each repeated
  block, say) and run the rest eagerly. Found top-down from the modules the workload reaches:
  each module is called once with the inputs it got in an eager call, compiled alone with the
  eager backend (Dynamo's breaks do not depend on the backend), and kept whole when it traced
  clean, else searched inside.
- disable: `torch.compiler.disable` on the smallest function that holds each captured break
  (library functions too), the rest compiled as now.
Running eagerly is the eager mode itself, already timed interleaved with the default mode.
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from advisor.core.model import BreakSite, CodeUnit, Location
from advisor.measure import torch_adapter
from advisor.measure.capture import CaptureSession
from advisor.measure.workload import Workload

# Functions Dynamo writes itself (a resume function continues a frame after a break).
_GENERATED = ("torch_dynamo_resume_in_", "__resume_at_")
# Containers with no forward of their own: searched inside, never compiled alone.
_CONTAINERS = ("ModuleList", "ModuleDict", "ParameterList", "ParameterDict")


@dataclass
class _Recorded:
    """The first call a module got in the eager call: its inputs, and how often it ran."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    calls: int = 1


def module_roots(workload: Workload) -> dict[str, Any]:
    """The modules a workload compiles or reaches, by the name the user knows them by: its
    compiled module, the module it is, or the modules its function holds (bound `self`,
    closure cells, default arguments, the globals it names, its arguments)."""
    if workload.compiled_module is not None:
        return {"model": workload.compiled_module}
    fn = workload.fn
    if torch_adapter.is_module(fn):
        return {"model": fn}
    found: dict[str, Any] = {}
    for name, value in _held_by(fn, workload.args, dict(workload.kwargs)):
        if torch_adapter.is_module(value) and all(value is not v for v in found.values()):
            found[name] = value
    return found


def holds_ddp(workload: Workload) -> bool:
    """Whether a module the workload compiles or reaches is, or holds, a DistributedDataParallel
    module (its graphs are then split at gradient-bucket boundaries by DDP's optimizer)."""
    ddp = torch_adapter.ddp_class()
    if ddp is None:  # a build without torch.distributed
        return False
    return any(
        isinstance(sub, ddp)
        for module in module_roots(workload).values()
        for sub in module.modules()
    )


def _held_by(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Iterator[tuple[str, Any]]:
    target = getattr(fn, "__func__", fn)
    owner = getattr(fn, "__self__", None)
    if owner is not None:
        yield "self", owner
    code = getattr(target, "__code__", None)
    if code is not None:
        cells = getattr(target, "__closure__", None) or ()
        yield from zip(
            code.co_freevars, (c.cell_contents for c in cells if _filled(c)), strict=False
        )
        namespace = getattr(target, "__globals__", {})
        yield from ((n, namespace[n]) for n in code.co_names if n in namespace)
    with contextlib.suppress(TypeError, ValueError):  # a builtin has no signature
        for name, value in inspect.signature(fn).parameters.items():
            if value.default is not inspect.Parameter.empty:
                yield name, value.default
    yield from ((f"args[{i}]", a) for i, a in enumerate(args))
    yield from kwargs.items()


def _filled(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:  # an empty cell
        return False
    return True


def record_calls(workload: Workload, roots: dict[str, Any]) -> dict[str, _Recorded]:
    """Each sub-module's first inputs (and call count) in one eager call of the workload."""
    recorded: dict[str, _Recorded] = {}
    handles = []
    for root, module in roots.items():
        for path, sub in _named(root, module):
            handles.append(
                sub.register_forward_pre_hook(_recorder(path, recorded), with_kwargs=True)
            )
    try:
        workload()
    finally:
        for handle in handles:
            handle.remove()
    return recorded


def _named(root: str, module: Any) -> Iterator[tuple[str, Any]]:
    for name, sub in module.named_modules():
        yield (f"{root}.{name}" if name else root), sub


def _recorder(path: str, recorded: dict[str, _Recorded]) -> Callable[..., None]:
    def hook(_module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if path in recorded:
            recorded[path].calls += 1
        else:
            recorded[path] = _Recorded(args, dict(kwargs))

    return hook


def clean_regions(
    roots: dict[str, Any], recorded: dict[str, _Recorded], roots_compiled: bool = True
) -> list[tuple[str, Any]]:
    """The largest modules, top-down from the roots, whose own compile has no break; torch.nn's
    own single-layer modules alone are not worth a region. A clean root is a region itself
    when the workload compiles more than its modules (a training step around the model); when
    the workload is the module (`roots_compiled`), a clean root compiles as one graph anyway."""
    verdicts: dict[tuple[type, str], bool] = {}
    regions: list[tuple[str, Any]] = []
    for root, module in roots.items():
        if _traces_clean(module, recorded.get(root), verdicts):
            if not roots_compiled:
                regions.append((root, module))
            continue
        regions += _search(root, module, recorded, verdicts)
    return regions


def roots_compiled(workload: Workload) -> bool:
    """Whether the default mode compiles exactly the roots (the module, or its compiled
    module), rather than a function around them."""
    return workload.compiled_module is not None or torch_adapter.is_module(workload.fn)


def script_loop(workload: Workload) -> bool:
    """One iteration of a user's script's own loop (`script_load`): its optimizers are the ones
    the loop steps, and its body is the script's, not a function to compile whole."""
    return callable(getattr(workload.fn, "optimizers_stepped", None))


def optimizers_held(workload: Workload) -> dict[str, Any]:
    """The optimizers a training step holds (closure cells, globals, bound self, arguments);
    for one iteration of a script's loop, those the loop steps."""
    if script_loop(workload):
        return dict(workload.fn.optimizers_stepped())  # type: ignore[attr-defined]
    found: dict[str, Any] = {}
    for name, value in _held_by(workload.fn, workload.args, dict(workload.kwargs)):
        if torch_adapter.is_optimizer(value) and all(value is not v for v in found.values()):
            found[name] = value
    return found


class CompiledOptimizers:
    """Each optimizer's `step` compiled on its own (`torch.compile(optimizer.step)`) and in
    place on the instance while inside."""

    def __init__(self, optimizers: dict[str, Any], backend: Any) -> None:
        self.compiled = [
            (opt, torch_adapter.compile_mode(opt.step, backend, False))
            for opt in optimizers.values()
        ]

    def __enter__(self) -> CompiledOptimizers:
        for opt, step in self.compiled:
            opt.step = step
        return self

    def __exit__(self, *exc: object) -> None:
        for opt, _ in self.compiled:
            del opt.step  # the class's own step again


def _search(
    path: str, module: Any, recorded: dict[str, _Recorded], verdicts: dict[tuple[type, str], bool]
) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for name, child in module.named_children():
        child_path = f"{path}.{name}"
        contained = type(child).__name__ in _CONTAINERS
        if (
            not contained
            and _worth_a_region(child)
            and _traces_clean(child, recorded.get(child_path), verdicts)
        ):
            out.append((child_path, child))
        elif contained or any(True for _ in child.children()):
            out += _search(child_path, child, recorded, verdicts)
    return out


def _worth_a_region(module: Any) -> bool:
    """Not a lone torch.nn layer (Linear, LayerNorm...): compiling one op saves nothing."""
    has_children = any(True for _ in module.children())
    return has_children or not type(module).__module__.startswith("torch.nn")


def _traces_clean(
    module: Any, call: _Recorded | None, verdicts: dict[tuple[type, str], bool]
) -> bool:
    """Whether the module, called with its recorded inputs, compiles with no break (eager
    backend); a module that never ran is not a region. Modules of one class called with
    inputs of one shape are traced once."""
    if call is None:
        return False
    key = (type(module), _shapes(call))
    if key not in verdicts:
        verdicts[key] = _breakless(module, call)
    return verdicts[key]


def _shapes(call: _Recorded) -> str:
    """The call's inputs by shape (tensors) or type (anything else: a library object's
    `shape` may be a method)."""
    leaves, _ = torch_adapter.tree_leaves_and_spec((call.args, call.kwargs))
    return repr(
        [tuple(leaf.shape) if torch_adapter.is_tensor(leaf) else type(leaf) for leaf in leaves]
    )


def _breakless(module: Any, call: _Recorded) -> bool:
    # Each probe starts from a clean cache: modules of many classes would otherwise pile up
    # recompiles of shared code (a base class's forward) up to Dynamo's limit.
    torch_adapter.reset_dynamo()
    compiled = torch_adapter.compile_mode(torch_adapter.module_call_impl(module), "eager", False)
    session = CaptureSession()
    try:
        with session:
            compiled(*call.args, **call.kwargs)
    except Exception:  # a module that cannot run alone is no region
        return False
    capture = session.result()
    return bool(capture.frames) and not capture.sites and not any(f.skipped for f in capture.frames)


def region_units(regions: list[tuple[str, Any]]) -> tuple[CodeUnit, ...]:
    return tuple(
        CodeUnit(path, type(m).__qualname__, _class_location(type(m))) for path, m in regions
    )


def _class_location(cls: type) -> Location | None:
    try:
        file = inspect.getsourcefile(cls)
        _, line = inspect.getsourcelines(cls)
    except (OSError, TypeError):
        return None
    return Location(file, line, cls.__qualname__) if file else None


class CompiledRegions:
    """Each region compiled once (as `module.compile()` would, with `backend`), and in place
    while inside: the rest of the workload runs eagerly. Reusable, one call at a time."""

    def __init__(self, regions: list[tuple[str, Any]], backend: Any) -> None:
        self.compiled = [
            (
                module,
                torch_adapter.compile_mode(torch_adapter.module_call_impl(module), backend, False),
            )
            for _, module in regions
        ]

    def __enter__(self) -> CompiledRegions:
        for module, impl in self.compiled:
            torch_adapter.use_compiled_call(module, impl)
        return self

    def __exit__(self, *exc: object) -> None:
        for module, _ in self.compiled:
            torch_adapter.use_compiled_call(module, None)


def _compiled(module: Any, backend: Any) -> Callable[..., Any]:
    return torch_adapter.compile_mode(torch_adapter.module_call_impl(module), backend, False)


# --- disable: the functions that hold the breaks ---------------------------------------------


def functions_holding(
    sites: tuple[BreakSite, ...], workload: Workload
) -> list[tuple[CodeUnit, Callable[..., Any]]]:
    """For each break, the smallest live function whose code holds its line (a function made
    afresh on each call, such as a closure, gives way to the one it is made in); not the
    compiled function itself, whose eager run is the eager mode, nor Dynamo's own code."""
    root_codes = {_code(f) for f in (workload.fn, workload.compiled_module) if f is not None}
    functions = [
        f
        for f in gc.get_objects()
        if type(f) is types.FunctionType and not f.__code__.co_name.startswith(_GENERATED)
    ]
    out: list[tuple[CodeUnit, Callable[..., Any]]] = []
    seen: set[types.CodeType] = set()
    for site in sites:
        if torch_adapter.is_dynamo_own(site.where.file):
            continue  # a polyfill Dynamo traces in place of a builtin: nothing to disable
        fn = _innermost(functions, site.where.file, site.where.line)
        if fn is None or fn.__code__ in root_codes or fn.__code__ in seen:
            continue
        code = fn.__code__
        seen.add(code)
        # a decorator's wrapper is one code object in many function objects: disable them all
        name = getattr(code, "co_qualname", code.co_name)
        unit = CodeUnit(name, code.co_name, Location(code.co_filename, code.co_firstlineno, name))
        out += [(unit, f) for f in functions if f.__code__ is code]
    return out


def _innermost(functions: list[types.FunctionType], file: str, line: int) -> Any:
    holding = [f for f in functions if f.__code__.co_filename == file and _spans(f.__code__, line)]
    return min(holding, key=lambda f: _span(f.__code__), default=None)


def _spans(code: types.CodeType, line: int) -> bool:
    lines = [n for _, _, n in code.co_lines() if n is not None]
    return bool(lines) and code.co_firstlineno <= line <= max(lines)


def _span(code: types.CodeType) -> int:
    lines = [n for _, _, n in code.co_lines() if n is not None]
    return max(lines) - code.co_firstlineno if lines else 0


def _code(obj: Any) -> types.CodeType | None:
    forward = getattr(obj, "forward", None) if not isinstance(obj, types.FunctionType) else obj
    target = getattr(forward, "__func__", forward)
    return getattr(target, "__code__", None)
