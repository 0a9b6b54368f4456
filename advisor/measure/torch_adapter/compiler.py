"""Compiling and the compiler's state: torch's version, Dynamo's reset, the Inductor backend
that records its compile ids, a module's compiled call, the break probe, recompile metrics,
Dynamo and Inductor config (patch, snapshot, restore, guard-skipping stances) and pytree
flattening of outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar


def torch_version() -> str:
    import torch

    return str(torch.__version__)


def reset_dynamo() -> None:
    """Drop every Dynamo cache entry and counter, so the next compile starts clean."""
    import torch._dynamo

    torch._dynamo.reset()


def warm_compiler() -> None:
    """Do once what every compiling process would otherwise do on its first compile: import
    Dynamo and Inductor, and probe which vector ISA the CPU's compiler can build for (Inductor
    runs a subprocess per candidate ISA; measured here, about 1 s, and the imports about 2 s).
    The fork server calls this, so the workers forked from it start with both done. Neither
    starts a thread or a process that would outlive the call (forking after it is safe).
    Best effort: a torch without these entry points compiles as before."""
    try:
        import torch._dynamo
        import torch._inductor.compile_fx  # noqa: F401
        from torch._inductor import cpu_vec_isa
    except ImportError:
        return
    probe = getattr(cpu_vec_isa, "pick_vec_isa", None)
    if callable(probe):
        try:
            probe()  # cached in the process (lru_cache), so in each forked child
        except Exception:  # no C++ compiler: Inductor says so at the compile that needs it
            return


# --- backends ---------------------------------------------------------------------------------


def current_compile_id() -> str | None:
    try:
        from torch._guards import CompileContext
    except ImportError:
        return None
    cid = CompileContext.current_compile_id()
    return str(cid) if cid is not None else None


class InductorBackend:
    """A backend that compiles with Inductor and records which compile ids it served.

    Each mode gets its own instance: Dynamo guards cache entries on the backend's identity
    (BACKEND_MATCH), so one mode's compiled code is never reused by another mode even though
    they trace the same code objects, and all modes can stay warm for interleaved timing.
    """

    def __init__(self, label: str, on_graph: Callable[[str | None, Any], None] | None = None):
        self.label = label
        self.compile_ids: list[str] = []
        self._on_graph = on_graph
        self.__name__ = f"advisor_inductor_{label}"

    def __call__(self, gm: Any, example_inputs: Any) -> Any:
        from torch._inductor.compile_fx import compile_fx

        cid = current_compile_id()
        if cid is not None:
            self.compile_ids.append(cid)
        if self._on_graph is not None:
            self._on_graph(cid, gm)
        return compile_fx(gm, example_inputs)


def compile_mode(fn: Callable[..., Any], backend: Any, fullgraph: bool) -> Callable[..., Any]:
    import torch

    return torch.compile(fn, backend=backend, fullgraph=fullgraph)


def torch_compile(fn: Any) -> Any:
    """`torch.compile(fn)` with torch's defaults, `torch.compile` read at the call: in a script
    the advisor runs, that is the advisor's stand-in (`intercept`)."""
    import torch

    return torch.compile(fn)


def module_call_impl(module: Any) -> Callable[..., Any]:
    """What `nn.Module.compile()` compiles: the module's own call implementation (a script's
    compiled function, routed: the function itself)."""
    from advisor.measure.torch_adapter.intercept import RoutedCall

    if isinstance(module, RoutedCall):
        return module.eager
    return module._call_impl


def use_compiled_call(module: Any, compiled: Callable[..., Any] | None) -> None:
    """Point a module's calls at a compiled call implementation (None: back to eager), as
    `nn.Module.compile()` does; each mode keeps its own compiled version. A script's routed
    callable (`intercept.RoutedCall`) keeps standing in the module and takes the route."""
    from advisor.measure.torch_adapter.intercept import RoutedCall

    routed = module if isinstance(module, RoutedCall) else None
    current = getattr(module, "_compiled_call_impl", None)
    routed = routed or (current if isinstance(current, RoutedCall) else None)
    if routed is not None:
        routed.route = compiled
        return
    module._compiled_call_impl = compiled


def break_probe_functions() -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """The probe: two tiny graphs split by one explicit break, and the same ops unbroken. Timed
    against each other unprofiled, they price one break; profiled beside the workload, the
    first prices one more graph call and one break's glue (reconstruction, the resume call)."""
    import torch._dynamo

    def advisor_break_probe(x: Any) -> Any:
        y = x * 2.0 + 1.0
        torch._dynamo.graph_break()
        return y * 3.0

    def advisor_unbroken_probe(x: Any) -> Any:
        y = x * 2.0 + 1.0
        return y * 3.0

    return advisor_break_probe, advisor_unbroken_probe


def recompile_reasons() -> dict[str, str]:
    """compile id -> reason for every recompile Dynamo recorded (most recent 64 compiles)."""
    try:
        from torch._dynamo.utils import get_compilation_metrics
    except ImportError:
        return {}
    reasons: dict[str, str] = {}
    for metrics in get_compilation_metrics():
        reason = getattr(metrics, "recompile_reason", None)
        cid = getattr(metrics, "compile_id", None)
        if reason and cid is not None:
            reasons[str(cid)] = str(reason)
    return reasons


# --- Dynamo config ------------------------------------------------------------------------


def dynamo_config_patch(setting: str, value: Any) -> Any:
    """A context manager that sets one `torch._dynamo.config` value; raises if it is unknown."""
    import torch._dynamo.config as dynamo_config

    if not hasattr(dynamo_config, setting):
        raise AttributeError(f"torch._dynamo.config has no '{setting}' in torch {torch_version()}")
    return dynamo_config.patch(**{setting: value})


def guard_skipping_stances() -> tuple[Any, Any] | None:
    """Two context makers, (default stance, stance that skips guard evaluation), to time the
    same warm compiled code with and without its guards; None where this torch lacks
    `torch.compiler.set_stance(..., skip_guard_eval_unsafe=...)`. Both go through set_stance
    so the two sides pay the same context-manager overhead."""
    import inspect

    import torch

    set_stance = getattr(torch.compiler, "set_stance", None)
    if set_stance is None:
        return None
    try:
        if "skip_guard_eval_unsafe" not in inspect.signature(set_stance).parameters:
            return None
    except (TypeError, ValueError):
        return None
    return (
        lambda: set_stance("default"),
        lambda: set_stance("default", skip_guard_eval_unsafe=True),
    )


def dynamo_config_snapshot() -> dict[str, Any]:
    """Every Dynamo config value, to check that a run leaves them as it found them."""
    import torch._dynamo.config as dynamo_config

    return dict(dynamo_config.get_config_copy())


def _config_modules() -> dict[str, Any]:
    import torch._dynamo.config as dynamo_config
    import torch._inductor.config as inductor_config

    return {"dynamo": dynamo_config, "inductor": inductor_config}


def compile_config_state() -> dict[str, dict[str, Any]]:
    """Every Dynamo and Inductor config value (deep copies), to restore after a run."""
    return {name: dict(module.get_config_copy()) for name, module in _config_modules().items()}


def restore_compile_config(state: dict[str, dict[str, Any]]) -> list[str]:
    """Set back every config value that differs from `state`; returns the names it reset.
    Only changed values are written, so untouched settings keep their defaults' provenance."""
    restored = []
    for name, module in _config_modules().items():
        now = module.get_config_copy()
        for key, value in state.get(name, {}).items():
            if key in now and now[key] != value:
                setattr(module, key, value)
                restored.append(f"{name}.{key}")
    return restored


# --- outputs and logs -------------------------------------------------------------------------


def tree_leaves_and_spec(value: Any) -> tuple[list[Any], Any]:
    """Flatten nested containers of tensors (torch's pytree, which knows ModelOutput-style
    registered classes)."""
    from torch.utils._pytree import tree_flatten

    return tree_flatten(value)


DYNAMO_LOGGER = "torch._dynamo"


def is_dynamo_own(file: str) -> bool:
    """Code of Dynamo's own (its polyfills of builtins such as `all`), which a break can be
    located in but a user cannot disable or change."""
    return "/torch/_dynamo/" in file.replace("\\", "/")


# The modules whose Python warnings are Dynamo's own (`warnings.filterwarnings(module=...)`).
DYNAMO_WARNING_MODULES = r"torch\._dynamo(\.|$)"


# --- running chosen frames eagerly (what `torch.compiler.disable` does) -------------------------


_Swap = TypeVar("_Swap", bound="_SwappedAttributes")


class _SwappedAttributes:
    """A context that swaps module and class attributes: each patch is (owner, name, the value
    held, its replacement). Entering sets the replacements; leaving puts the held values back in
    reverse order, so an attribute patched twice ends as it began."""

    def __init__(self) -> None:
        self.patches: list[tuple[Any, str, Any, Any]] = []

    def __enter__(self: _Swap) -> _Swap:
        for owner, name, _, replacement in self.patches:
            setattr(owner, name, replacement)
        return self

    def __exit__(self, *exc: object) -> None:
        for owner, name, held, _ in reversed(self.patches):
            setattr(owner, name, held)


class DisabledFrames(_SwappedAttributes):
    """A context in which each of `functions` is replaced, wherever a module or class holds it
    (module globals, class attributes), by `torch.compiler.disable(function)`: Dynamo breaks the
    graph at its call and runs it, and all it calls, eagerly. Entered around each compile and
    call of a placement variant only, so other compiled code in the process keeps the original.
    A reference held elsewhere (a closure, a local alias) keeps calling the original."""

    def __init__(self, functions: list[Callable[..., Any]]) -> None:
        import torch

        super().__init__()
        for fn in functions:
            disabled = torch.compiler.disable(fn)
            for owner, name, original in _holders(fn):
                replacement = (
                    staticmethod(disabled) if isinstance(original, staticmethod) else disabled
                )
                self.patches.append((owner, name, original, replacement))


def _holders(fn: Callable[..., Any]) -> list[tuple[Any, str, Any]]:
    """(owner, attribute, value) for every module global and class attribute that is `fn`
    (a class attribute may hold it as a staticmethod)."""
    import sys
    import warnings

    out: list[tuple[Any, str, Any]] = []
    seen: set[int] = set()
    with warnings.catch_warnings():  # reading a deprecated module attribute warns
        warnings.simplefilter("ignore")
        for module in list(sys.modules.values()):
            out += _held_in(module, fn, seen)
    return out


def _held_in(module: Any, fn: Callable[..., Any], seen: set[int]) -> list[tuple[Any, str, Any]]:
    """Where one module's globals, and the classes among them, hold `fn`."""
    namespace = getattr(module, "__dict__", None)
    if not isinstance(namespace, dict):
        return []
    out: list[tuple[Any, str, Any]] = []
    for name, value in list(namespace.items()):
        if value is fn:
            out.append((module, name, value))
        elif _is_class(value) and id(value) not in seen:
            seen.add(id(value))
            out += [(value, n, v) for n, v in vars(value).items() if _holds(v, fn)]
    return out


def _is_class(value: Any) -> bool:
    try:
        return isinstance(value, type)
    except ReferenceError:  # a weak proxy whose object is gone
        return False


def _holds(value: Any, fn: Callable[..., Any]) -> bool:
    return value is fn or (isinstance(value, staticmethod) and value.__func__ is fn)


def disabled_wrappers(names: set[str]) -> list[Callable[..., Any]]:
    """The `torch.compiler.disable` wrappers held under any of `names` by a module global or a
    class attribute (the names a call line uses)."""
    import sys
    import warnings

    found: list[Callable[..., Any]] = []
    with warnings.catch_warnings():  # reading a deprecated module attribute warns
        warnings.simplefilter("ignore")
        for module in list(sys.modules.values()):
            namespace = getattr(module, "__dict__", None)
            if not isinstance(namespace, dict):
                continue
            for name in names & set(namespace):
                value = namespace[name]
                if _is_disable_wrapper(value) and all(value is not f for f in found):
                    found.append(value)
    return found


def _is_disable_wrapper(value: Any) -> bool:
    try:
        return callable(value) and hasattr(value, "_torchdynamo_orig_callable")
    except ReferenceError:
        return False


class EnabledFrames(_SwappedAttributes):
    """The inverse of `DisabledFrames`: each `torch.compiler.disable` wrapper replaced, wherever
    a module or class holds it, by the function it wraps, so Dynamo traces the body."""

    def __init__(self, wrappers: list[Callable[..., Any]]) -> None:
        super().__init__()
        for wrapper in wrappers:
            original = wrapper._torchdynamo_orig_callable  # type: ignore[attr-defined]
            for owner, name, held in _holders(wrapper):
                # a class may hold the wrapper as a staticmethod: so must its replacement
                replacement = staticmethod(original) if isinstance(held, staticmethod) else original
                self.patches.append((owner, name, held, replacement))
