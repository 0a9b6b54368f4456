"""The user's own script as a target (`advisor run train.py -- its args`): what a survey run of
the script found, before any arm was measured.

The survey runs the script once as `python script.py args` would, with every callable that goes
through `torch.compile` (the function form, the decorator, `nn.Module.compile()`, a module passed
to `torch.compile`) recorded where it was compiled and timed at each call. The one with the most
time (or the one `--callable` names) is then measured in every arm; how one unit of it is timed
is `ScriptSurvey.unit`:

- "call": the callable's own call, with the arguments of its `at_call`-th call in the script
  (an inference loop, a decorated function);
- "iteration": from one call of it to the next, i.e. the body of the script's loop (a training
  loop, where backward and the optimizer run between two calls).

Facts only; `advisor.render` words them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

UNITS = ("call", "iteration")

# How a survey ended: the script returned (or called sys.exit(0)); it had made enough calls of
# its compiled callables to choose one; it ran past its time budget; it raised; it exited with
# a non-zero code.
ENDINGS = ("finished", "enough_calls", "budget", "raised", "exited")


@dataclass(frozen=True)
class CompiledCallable:
    """One callable the script passed through `torch.compile`, as the survey saw it."""

    name: str  # the module's class or the function's qualified name
    kind: str  # "module.compile()", "torch.compile(module)", "torch.compile(fn)", "--compile"
    site_file: str  # where the script compiled it
    site_line: int
    call_file: str = ""  # where the script first called it (the hot call's line)
    call_line: int = 0
    calls: int = 0
    total_s: float = 0.0  # wall time inside its calls after the first
    first_call_s: float | None = None  # compile + first call
    backward: bool = False  # a backward ran through its outputs: a training loop
    ordinal: int = 0  # which of the compiles at its site (a loop may compile several)
    between_s: float = 0.0  # from one warm call's start to the next's, summed: the loop body

    @property
    def site(self) -> str:
        return f"{self.site_file}:{self.site_line}"

    @property
    def key(self) -> str:
        return callable_key(self.site_file, self.site_line, self.ordinal)

    @property
    def call_site(self) -> str:
        return f"{self.call_file}:{self.call_line}" if self.call_file else ""

    def named(self, pick: str) -> bool:
        """`pick` as `--callable` reads it: FILE:LINE where it was compiled or first called
        (the file by its path or its name), else its name (a module's class, a function's
        qualified name, or that name's last part)."""
        file, _, line = pick.rpartition(":")
        if file and line.isdigit():
            places = ((self.site_file, self.site_line), (self.call_file, self.call_line))
            return any(
                at == int(line) and (where == file or Path(where).name == Path(file).name)
                for where, at in places
            )
        return self.name == pick or self.name.endswith(f".{pick}")


@dataclass(frozen=True)
class ScriptSurvey:
    """The script, how it ran once, every compiled callable it reached and the one measured."""

    path: str
    argv: tuple[str, ...] = ()  # the script's own arguments (after `--`)
    cwd: str = ""
    exit_code: int | None = None  # None: stopped by the advisor (enough calls, budget)
    ended: str = "finished"  # one of ENDINGS
    wall_s: float = 0.0
    callables: tuple[CompiledCallable, ...] = ()
    measured: int | None = None  # index in `callables` of the one measured in every arm
    unit: str = "call"  # one of UNITS
    at_call: int = 1  # "call": the call whose arguments are replayed
    error: str = ""  # the script's own exception, one line ("raised")
    stdout_tail: str = ""  # the end of the script's own output (never mixed with the advisor's)
    stderr_tail: str = ""
    modules_called: tuple[str, ...] = ()  # no torch.compile seen: modules it called at top level
    loop_calls: tuple[str, ...] = ()  # no torch.compile seen: functions called in its loops

    @property
    def hot(self) -> CompiledCallable | None:
        if self.measured is None or not 0 <= self.measured < len(self.callables):
            return None
        return self.callables[self.measured]

    def share(self, item: CompiledCallable) -> float | None:
        """The callable's share of the script's wall time in the survey (warm calls)."""
        return item.total_s / self.wall_s if self.wall_s > 0 else None


SCRIPT_PARAM = "script"  # the target's parameter that holds a `ScriptSpec` (as a dict)


@dataclass(frozen=True)
class ScriptSpec:
    """How a process runs the script: what `load_target` gets (as the `script` parameter) in
    every worker, so each arm is the script itself, run as `python script.py argv` would."""

    path: str  # absolute
    argv: tuple[str, ...] = ()
    cwd: str = ""
    key: str = ""  # the compiled callable measured: "site_file:site_line#k" (k-th at that site)
    unit: str = "call"
    at_call: int = 1
    compile: tuple[str, ...] = ()  # `--compile NAME`: what to compile where the script does not
    pick: str = ""  # `--callable FILE:LINE|NAME`: the one to measure (default: the most time)

    def to_param(self) -> dict[str, object]:
        return {
            "path": self.path,
            "argv": list(self.argv),
            "cwd": self.cwd,
            "key": self.key,
            "unit": self.unit,
            "at_call": self.at_call,
            "compile": list(self.compile),
            "pick": self.pick,
        }

    @classmethod
    def from_param(cls, value: object) -> ScriptSpec:
        data = dict(value) if isinstance(value, dict) else {}
        return cls(
            path=str(data.get("path", "")),
            argv=tuple(str(a) for a in data.get("argv", ())),  # type: ignore[union-attr]
            cwd=str(data.get("cwd", "")),
            key=str(data.get("key", "")),
            unit=str(data.get("unit", "call")),
            at_call=int(data.get("at_call", 1)),  # type: ignore[call-overload]
            compile=tuple(str(a) for a in data.get("compile", ())),  # type: ignore[union-attr]
            pick=str(data.get("pick", "")),
        )


def shown_params(argv: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """How a script run names its parameters in `WorkloadInfo.params` (and a CI baseline): its
    own arguments; the rest of its spec is the run's business."""
    return (("argv", json.dumps(list(argv))),)


def callable_key(site_file: str, site_line: int, ordinal: int) -> str:
    """A compiled callable's name across runs of the script: where it was compiled, and which
    of the compiles at that line (a loop may compile several)."""
    return f"{site_file}:{site_line}#{ordinal}"
