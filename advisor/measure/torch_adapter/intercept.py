"""Standing in for `torch.compile` while a user's script runs (`advisor run script.py`).

`torch.compile(fn_or_module, **kw)`, `@torch.compile`, `@torch.compile(**kw)` and
`nn.Module.compile(**kw)` are public; what they are replaced with here touches the private side:
`nn.Module.compile()` stores the compiled call in `module._compiled_call_impl`, which
`Module.__call__` consults before the eager `_call_impl`. A script's compiled callable becomes a
`RoutedCall`: each call goes to `route` (a compiled implementation) or, while `route` is None,
to the eager implementation. A module passed to `torch.compile` is routed in place, as
`module.compile()` would do, and returned itself (not an `OptimizedModule`), so that every arm
of the advisor can swap what its calls run without the script noticing.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

KIND_MODULE_METHOD = "module.compile()"
KIND_MODULE = "torch.compile(module)"
KIND_FUNCTION = "torch.compile(fn)"


class RoutedCall:
    """A compiled callable of the script: calls go to `route`, or to `eager` while it is None.

    It stands in a module's `_compiled_call_impl`, or is what `torch.compile(fn)` returned to
    the script. `use_compiled_call` and `module_call_impl` (in `compiler`) know it, so the
    harness compiles and swaps arms on it as on a module compiled in place."""

    def __init__(self, eager: Callable[..., Any]) -> None:
        self.eager = eager
        self.route: Callable[..., Any] | None = None
        self.__wrapped__ = getattr(eager, "__wrapped__", eager)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return (self.route or self.eager)(*args, **kwargs)


@dataclass(frozen=True)
class CompileRequest:
    """One `torch.compile` the script made: what, how, and where in the script."""

    target: Any  # the module or function
    kwargs: dict[str, Any] = field(default_factory=dict)
    kind: str = KIND_FUNCTION
    site_file: str = ""
    site_line: int = 0

    @property
    def is_module(self) -> bool:
        import torch

        return isinstance(self.target, torch.nn.Module)

    def eager_call(self) -> Callable[..., Any]:
        """What `module.compile()` compiles (the module's `_call_impl`), or the function."""
        return self.target._call_impl if self.is_module else self.target


# A handler gets each request and returns the RoutedCall the script's calls go through.
Handler = Callable[[CompileRequest], RoutedCall]
# Which compile calls are the script's: others (the advisor's own) go to the real torch.compile.
Filter = Callable[[], bool]


@dataclass
class Interceptor:
    """The real `torch.compile`, kept for the handler's own compiles."""

    real_compile: Callable[..., Any]


def route_module(module: Any, routed: RoutedCall) -> None:
    """Send the module's calls through `routed` (what `module.compile()` sets up)."""
    module._compiled_call_impl = routed


def unroute_module(module: Any) -> None:
    """The module's calls back to plain eager."""
    module._compiled_call_impl = None


@contextlib.contextmanager
def intercepted(handler: Handler, is_script: Filter = lambda: True) -> Iterator[Interceptor]:
    """Within the block, the script's compiles go to `handler`; the advisor's own go through."""
    import torch

    real_compile, real_method = torch.compile, torch.nn.Module.compile
    interceptor = Interceptor(real_compile)

    def request(target: Any, kwargs: dict[str, Any], kind: str, depth: int) -> RoutedCall:
        file, line = script_frame(depth + 1)
        return handler(CompileRequest(target, dict(kwargs), kind, file, line))

    def compile_stand_in(model: Any = None, **kwargs: Any) -> Any:
        if not is_script():
            return real_compile(model, **kwargs) if model is not None else real_compile(**kwargs)
        if model is None:  # `@torch.compile(...)`: the decorator comes back
            file, line = script_frame(1)

            def decorate(fn: Any) -> Any:
                return handler(CompileRequest(fn, dict(kwargs), KIND_FUNCTION, file, line))

            return decorate
        if isinstance(model, torch.nn.Module):
            route_module(model, request(model, kwargs, KIND_MODULE, 1))
            return model
        return request(model, kwargs, KIND_FUNCTION, 1)

    def method_stand_in(self: Any, *args: Any, **kwargs: Any) -> None:
        if not is_script():
            real_method(self, *args, **kwargs)
            return
        route_module(self, request(self, kwargs, KIND_MODULE_METHOD, 1))

    torch.compile = compile_stand_in  # type: ignore[assignment]
    torch.nn.Module.compile = method_stand_in  # type: ignore[method-assign]
    try:
        yield interceptor
    finally:
        torch.compile = real_compile  # type: ignore[assignment]
        torch.nn.Module.compile = real_method  # type: ignore[method-assign]


def compile_request_call(interceptor: Interceptor, req: CompileRequest) -> Callable[..., Any]:
    """The request compiled as the script asked (its own keyword arguments)."""
    return interceptor.real_compile(req.eager_call(), **req.kwargs)


def script_frame(depth: int) -> tuple[str, int]:
    """The innermost caller outside torch and advisor, `depth` frames above the caller."""
    frame = sys._getframe(depth + 1)
    while frame is not None and _is_internal(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return "", 0
    return frame.f_code.co_filename, frame.f_lineno


def _is_internal(file: str) -> bool:
    return file.startswith(_internal_dirs()) or file.startswith("<")


@functools.cache
def _internal_dirs() -> tuple[str, ...]:
    import torch

    measure = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return (os.path.dirname(os.path.abspath(torch.__file__)) + os.sep, measure + os.sep)
