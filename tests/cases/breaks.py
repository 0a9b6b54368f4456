"""Small functions with known graph breaks, the ground truth for the capture/attribute tests.

Each case names its function, inputs and the true user-level breaks: (registry code, line of the
break in this file). Lines are looked up by marker comments (`# BREAK:<name>`), so editing this file
does not silently break the expected values. `tests/data/regenerate.py` records artifacts from
these cases.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

FILE = str(Path(__file__).resolve())


def marker_line(name: str) -> int:
    """Line number of the `# BREAK:<name>` marker in this file."""
    tag = f"# BREAK:{name}"
    for number, text in enumerate(Path(FILE).read_text().splitlines(), start=1):
        if text.rstrip().endswith(tag):
            return number
    raise KeyError(name)


def f_print(x: torch.Tensor) -> torch.Tensor:
    y = x.sin() + 1
    print("step", file=_SINK)  # BREAK:print
    return y.cos() * 2


def f_if(x: torch.Tensor) -> torch.Tensor:
    y = x.sin() + 1
    if y.sum() > 0:  # BREAK:if
        return y.cos() * 2
    return y.tan() * 2


def f_item(x: torch.Tensor) -> torch.Tensor:
    y = x.sin() + 1
    s = y.sum().item()  # BREAK:item
    return y.cos() * s


def f_nonzero(x: torch.Tensor) -> torch.Tensor:
    y = x.sin() + 1
    idx = torch.nonzero(y > 1.5)  # BREAK:nonzero
    return y.cos().sum() + idx.sum()


def f_loop(x: torch.Tensor) -> torch.Tensor:
    for _ in range(3):
        x = x.sin() + 1
        print("it", file=_SINK)  # BREAK:loop
    return x.cos()


def _helper(x: torch.Tensor) -> torch.Tensor:
    y = x.sin() + 1
    print("helper", file=_SINK)  # BREAK:helper
    return y.cos()


def _trace(x: torch.Tensor) -> None:
    print("stage", file=_SINK)  # BREAK:trace


def f_helper_thrice(x: torch.Tensor) -> torch.Tensor:
    # straight-line code (no loop): each call of the helper breaks inside a resume function
    # nested in the previous region, so the break runs three times per call
    _trace(x)
    x = x.sin()
    _trace(x)
    x = x.cos()
    _trace(x)
    return x * 2


def f_helper_loop(x: torch.Tensor) -> torch.Tensor:
    for _ in range(3):
        x = _helper(x)
    return x * 2


@torch.compiler.disable
def _disabled(x: torch.Tensor) -> torch.Tensor:
    return x * 3 + 1


def f_disable(x: torch.Tensor) -> torch.Tensor:
    y = x.sin() + 1
    z = _disabled(y)  # BREAK:disable
    return z.cos() * 2


class Inner(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x).relu()
        print("inner", file=_SINK)  # BREAK:module
        return y * 2


class Outer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pre = nn.Linear(8, 8)
        self.inner = Inner()
        self.post = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pre(x).relu()
        x = self.inner(x)  # OUTER:module
        return self.post(x)


def f_double(x: torch.Tensor) -> torch.Tensor:
    y = x.sin() + 1
    print("one", file=_SINK)  # BREAK:double1
    print("two", file=_SINK)  # BREAK:double2
    return y.cos() * 2


def f_start(x: torch.Tensor) -> torch.Tensor:
    print("start", file=_SINK)  # BREAK:start
    return (x.sin() + 1).cos()


def f_tail(x: torch.Tensor) -> torch.Tensor:
    y = (x.sin() + 1).cos()
    print("tail", file=_SINK)  # BREAK:tail
    return y


def f_recompile(x: torch.Tensor) -> torch.Tensor:
    y = x.sin() + 1
    print("shape", file=_SINK)  # BREAK:recompile
    return y.cos() * 2


class _Sink:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


_SINK = _Sink()


@dataclass(frozen=True)
class Case:
    """A break case: how to build the callable and its inputs, and the truth about its breaks."""

    name: str
    build: Callable[[], Callable[..., Any]]
    make_args: Callable[[], tuple[Any, ...]]
    breaks: tuple[tuple[str, str], ...]  # (gb_code, marker name) per user-level break
    frame_skipped: bool = False
    # inputs fed (in order) before make_args() during capture, to force recompiles
    extra_args: tuple[Callable[[], tuple[Any, ...]], ...] = ()
    occurrences: tuple[float, ...] = field(default=())  # per break, per call; default 1 each

    def expected(self) -> list[tuple[str, int]]:
        return [(code, marker_line(name)) for code, name in self.breaks]


def _vec() -> tuple[Any, ...]:
    torch.manual_seed(0)
    return (torch.randn(16),)


def _mat() -> tuple[Any, ...]:
    torch.manual_seed(0)
    return (torch.randn(4, 8),)


def _module() -> Callable[..., Any]:
    torch.manual_seed(0)
    return Outer().eval()


def _fn(f: Callable[..., Any]) -> Callable[[], Callable[..., Any]]:
    return lambda: f


CASES: dict[str, Case] = {
    c.name: c
    for c in [
        Case("print", _fn(f_print), _vec, (("GB0059", "print"),)),
        Case("if", _fn(f_if), _vec, (("GB0170", "if"),)),
        Case("item", _fn(f_item), _vec, (("GB0124", "item"),)),
        Case("nonzero", _fn(f_nonzero), _vec, (("GB0036", "nonzero"),)),
        Case("loop", _fn(f_loop), _vec, (("GB0059", "loop"),), frame_skipped=True),
        Case(
            "helper_loop",
            _fn(f_helper_loop),
            _vec,
            (("GB0059", "helper"),),
            frame_skipped=True,
            occurrences=(3.0,),
        ),
        Case(
            "helper_thrice", _fn(f_helper_thrice), _vec, (("GB0059", "trace"),), occurrences=(3.0,)
        ),
        Case("disable", _fn(f_disable), _vec, (("GB0098", "disable"),)),
        Case("module", _module, _mat, (("GB0059", "module"),)),
        Case("double", _fn(f_double), _vec, (("GB0059", "double1"), ("GB0059", "double2"))),
        Case("start", _fn(f_start), _vec, (("GB0059", "start"),)),
        Case("tail", _fn(f_tail), _vec, (("GB0059", "tail"),)),
        Case(
            "recompile",
            _fn(f_recompile),
            lambda: (torch.randn(32),),
            (("GB0059", "recompile"),),
            extra_args=(_vec,),
        ),
    ]
}
