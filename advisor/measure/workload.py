"""Workloads: what to measure. A factory takes a device name and returns a `Workload`
(or a plain `(callable, args)` tuple); targets name a factory. A factory that takes no
argument is called without one, and what it returns (an `nn.Module`, tensors in args and
kwargs) is moved to the device.

Target forms:
- `NAME`                      a built-in scenario: `scenarios/NAME.py:workload`
- `path/to/file.py:factory`   a factory in a Python file
- `package.module:factory`    a factory in an importable module
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from advisor.core.errors import AdvisorError, first_line
from advisor.core.script import SCRIPT_PARAM, ScriptSpec
from advisor.measure import torch_adapter
from advisor.measure.workload_def import Workload

SCENARIO_DIR = Path(__file__).resolve().parents[2] / "scenarios"
_SCENARIO_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class ScenarioInfo:
    name: str
    pattern: str
    expected_verdict: str
    gb_code: str | None
    line: int | None
    summary: str
    ranks: int = 1  # data-parallel ranks it runs with (`advisor run NAME --ranks N`)


def scenario_names() -> list[str]:
    if not SCENARIO_DIR.is_dir():
        return []
    return sorted(p.stem for p in SCENARIO_DIR.glob("*.py") if not p.stem.startswith("_"))


def load_target(target: str, device: str, params: Mapping[str, Any] | None = None) -> Workload:
    """Resolve a target string to a Workload on `device`, or raise AdvisorError (one line).

    `params` are passed to the factory as keyword arguments, so one factory can build many
    workloads (e.g. `build(device, model="mixtral")`).
    """
    params = dict(params or {})
    if SCRIPT_PARAM in params:  # the user's own script, run as it is (`advisor run x.py -- ...`)
        from advisor.measure.script_load import load_script

        return load_script(ScriptSpec.from_param(params[SCRIPT_PARAM]), device)
    module, factory, factory_name, label = find_factory(target)
    takes_device = _accepts_one_argument(factory)
    try:
        produced = factory(device, **params) if takes_device else factory(**params)
    except AdvisorError:
        raise
    except TypeError as exc:
        if params and _rejects(factory, params):
            raise AdvisorError(
                f"factory {label}:{factory_name} does not take the parameter(s) "
                f"{', '.join(sorted(params))}"
            ) from exc
        raise _factory_failed(label, factory_name, device, takes_device, params, exc) from exc
    except (Exception, SystemExit) as exc:  # the user's factory failed: report, do not crash
        raise _factory_failed(label, factory_name, device, takes_device, params, exc) from exc
    base = Path(module.__file__).stem if module.__file__ else module.__name__.rsplit(".", 1)[-1]
    default_name = base if factory_name == "workload" else f"{base}.{factory_name}"
    workload = coerce_workload(produced, default_name, f"{label}:{factory_name}")
    return workload if takes_device else moved_to(workload, device)


def check_target(target: str, params: Sequence[tuple[str, Any]] = ()) -> None:
    """Fail in seconds on a target that cannot load: a factory's module, file and name (a
    script target was checked when its spec was made)."""
    if not any(key == SCRIPT_PARAM for key, _ in params):
        find_factory(target)


def find_factory(target: str) -> tuple[ModuleType, Callable[..., Any], str, str]:
    """The module, factory, factory name and label a target names, without calling the
    factory; a missing file, a syntax error or a missing factory is an AdvisorError."""
    module, factory_name, label = _resolve_factory_module(target)
    factory = getattr(module, factory_name, None)
    if factory is None:
        raise AdvisorError(f"{label} has no factory named '{factory_name}'")
    if not callable(factory):
        raise AdvisorError(f"{label}:{factory_name} is not callable")
    return module, factory, factory_name, label


def _factory_failed(
    label: str,
    factory_name: str,
    device: str,
    takes_device: bool,
    params: Mapping[str, Any],
    exc: Exception,
) -> AdvisorError:
    shown = [repr(device)] if takes_device else []
    shown += [f"{k}={v!r}" for k, v in params.items()]
    return AdvisorError(
        f"factory {label}:{factory_name}({', '.join(shown)}) raised "
        f"{type(exc).__name__}: {first_line(exc)}"
    )


def _rejects(factory: Callable[..., Any], params: Mapping[str, Any]) -> bool:
    """Whether the factory's signature cannot take these keyword arguments."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return False
    if any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values()):
        return False
    return any(name not in signature.parameters for name in params)


def _accepts_one_argument(factory: Callable[..., Any]) -> bool:
    """Whether the factory can be called with the device name as its one argument."""
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable: assume the documented form
        return True
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    return bool(positional)


def moved_to(workload: Workload, device: str) -> Workload:
    """A device-agnostic factory's workload, moved to `device` (a no-op where it already is)."""

    def move(value: Any) -> Any:
        if torch_adapter.is_tensor(value):
            return value.to(device)
        if isinstance(value, tuple):
            return tuple(move(v) for v in value)
        if isinstance(value, list):
            return [move(v) for v in value]
        if isinstance(value, dict):
            return {k: move(v) for k, v in value.items()}
        return value

    fn = workload.fn
    if torch_adapter.is_module(fn):
        fn = fn.to(device)
    if torch_adapter.is_module(workload.compiled_module):
        workload.compiled_module.to(device)  # in place: the step holds this very module
    return dataclasses.replace(
        workload,
        fn=fn,
        args=tuple(move(a) for a in workload.args),
        kwargs={k: move(v) for k, v in workload.kwargs.items()},
    )


def api_target(fn: Callable[..., Any]) -> str:
    """How a report names a function or module given to the Python API (no target string):
    for a module, its class, not the instance."""
    named = type(fn) if torch_adapter.is_module(fn) else fn
    module = getattr(named, "__module__", None) or "?"
    qualname = getattr(named, "__qualname__", None) or type(named).__name__
    return f"{module}.{qualname} (Python API)"


def inputs_device(
    requested: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> str:
    """An explicit device as given; 'auto': where the inputs are (the first tensor among the
    args, kwargs and the module's parameters), else 'auto' for the CLI's choice."""
    if requested != "auto":
        return requested
    tensors = [v for v in (*args, *kwargs.values()) if torch_adapter.is_tensor(v)]
    if torch_adapter.is_module(fn):
        tensors += list(fn.parameters()) + list(fn.buffers())
    if not tensors:
        return "auto"
    where = tensors[0].device
    return str(where) if where.type == "cuda" else "cpu"


def coerce_workload(produced: Any, default_name: str, label: str) -> Workload:
    if isinstance(produced, Workload):
        if not callable(produced.fn):
            raise AdvisorError(f"{label} returned a Workload whose fn is not callable")
        return dataclasses.replace(
            produced, args=tuple(produced.args), name=produced.name or default_name
        )
    if isinstance(produced, tuple) and len(produced) == 2:
        fn, args = produced
        if not callable(fn):
            raise AdvisorError(
                f"{label} returned a non-callable ({type(fn).__name__}) as the function"
            )
        if isinstance(args, Sequence) and not isinstance(args, (str, bytes)):
            return Workload(fn, tuple(args), {}, default_name)
        return Workload(fn, (args,), {}, default_name)
    if callable(produced):
        raise AdvisorError(
            f"{label} returned a bare callable; return a Workload or a (callable, args) tuple"
        )
    raise AdvisorError(
        f"{label} returned {type(produced).__name__}; "
        "expected a Workload or a (callable, args) tuple"
    )


def _resolve_factory_module(target: str) -> tuple[ModuleType, str, str]:
    if ":" in target:
        where, factory_name = target.rsplit(":", 1)
        if not factory_name.isidentifier():
            raise AdvisorError(f"'{factory_name}' in target '{target}' is not a factory name")
    else:
        where, factory_name = target, "workload"
    if where.endswith(".py") or "/" in where or "\\" in where:
        return _load_file(Path(where)), factory_name, where
    if ":" not in target:
        if not _SCENARIO_NAME.match(where):
            raise AdvisorError(
                f"'{target}' is not a scenario name, FILE.py:factory or module:factory"
            )
        path = SCENARIO_DIR / f"{where}.py"
        if not path.is_file():
            known = ", ".join(scenario_names()) or "none"
            raise AdvisorError(f"unknown scenario '{where}' (known: {known})")
        return _load_file(path), factory_name, f"scenario {where}"
    if Path(where).is_file():  # `notes.txt:factory`: a file, not a module name
        raise AdvisorError(f"not a Python file: {where}")
    try:
        module = importlib.import_module(where)
    except ModuleNotFoundError as exc:
        raise AdvisorError(f"cannot import module '{where}': {exc}") from exc
    except SyntaxError as exc:
        raise AdvisorError(f"syntax error in {exc.filename}:{exc.lineno}: {exc.msg}") from exc
    except (Exception, SystemExit) as exc:  # sys.exit() at import must not end the advisor
        raise AdvisorError(
            f"importing '{where}' raised {type(exc).__name__}: {first_line(exc)}"
        ) from exc
    return module, factory_name, where


def _load_file(path: Path) -> ModuleType:
    if not path.exists():
        raise AdvisorError(f"file not found: {path}")
    if not path.is_file() or path.suffix != ".py":
        raise AdvisorError(f"not a Python file: {path}")
    resolved = path.resolve()
    # A stable module name per file, so functions keep a real __module__ (Dynamo and pickling
    # look at it) and loading the same file twice reuses the module.
    module_name = "advisor_target_" + re.sub(r"\W", "_", str(resolved.with_suffix("")))[-80:]
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    if spec is None or spec.loader is None:
        raise AdvisorError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        del sys.modules[module_name]
        raise AdvisorError(f"syntax error in {path}:{exc.lineno}: {exc.msg}") from exc
    except (Exception, SystemExit) as exc:  # sys.exit() at import must not end the advisor
        del sys.modules[module_name]
        raise AdvisorError(
            f"loading {path} raised {type(exc).__name__}: {first_line(exc)}"
        ) from exc
    return module


def scenario_info(name: str) -> ScenarioInfo:
    """Read a scenario's declared metadata (module-level PATTERN, EXPECTED_VERDICT, ...)."""
    module = _load_file(SCENARIO_DIR / f"{name}.py")
    doc = (module.__doc__ or "").strip()
    return ScenarioInfo(
        name=name,
        pattern=str(getattr(module, "PATTERN", "")),
        expected_verdict=str(getattr(module, "EXPECTED_VERDICT", "")),
        gb_code=getattr(module, "EXPECTED_GB_CODE", None),
        line=getattr(module, "EXPECTED_LINE", None),
        summary=doc.split("\n\n", 1)[0].replace("\n", " "),
        ranks=int(getattr(module, "RANKS", 1)),
    )
