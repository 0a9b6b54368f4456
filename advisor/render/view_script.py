"""The words and rows of a script target (`advisor run train.py -- its args`): the command the
survey ran, how that run ended, every callable the script passed through `torch.compile` and
which one every arm measured. The facts are `advisor.core.script`'s; the sentences are here.

Paths are shown relative to the script's folder (the callables' files) or to the folder it ran
in (the script itself), when they lie below it.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass

from advisor.core.model import CompiledCallable, Report, ScriptSurvey
from advisor.core.paths import display_path
from advisor.render.formatting import Display, fmt_ms, fmt_pct, fmt_s, without_controls

SCRIPT_HEADERS = (
    "callable",
    "kind",
    "compiled at",
    "called at",
    "calls",
    "time ms",
    "share of the script",
    "measured",
)
MEASURED_MARK = "measured"


@dataclass(frozen=True)
class ScriptView:
    """`command`: the script and its arguments as run, in `cwd`; `measured`: the callable every
    arm timed and what one timed unit of it is; `ended`: how the survey run ended; `others`: the
    compiled callables not measured, with their shares, on one line; `rows`: one per compiled
    callable (SCRIPT_HEADERS); `uncompiled`: what the survey saw when nothing went through
    torch.compile; the tails are the script's own output, untrusted text."""

    command: str
    cwd: str
    measured: str | None
    ended: str
    others: str | None
    rows: tuple[tuple[str, ...], ...]
    uncompiled: tuple[str, ...] = ()
    stdout_tail: str = ""
    stderr_tail: str = ""

    @property
    def run(self) -> str:
        """The command and the folder it ran in."""
        return f"{self.command} (cwd {self.cwd})" if self.cwd else self.command

    @property
    def summary(self) -> str:
        """The run in one line: the script, then the measured callable."""
        measured = f"; measured: {self.measured}" if self.measured else ""
        return f"script: {self.run}{measured}"


def script_view(report: Report) -> ScriptView | None:
    """None when the target was not a script: nothing about scripts is shown then."""
    survey = report.script
    if survey is None:
        return None
    display = _displayer(survey)
    return ScriptView(
        command=_command(survey),
        cwd=survey.cwd,
        measured=_measured(survey, display),
        ended=_ending(survey),
        others=_others(survey),
        rows=tuple(_row(survey, i, c, display) for i, c in enumerate(survey.callables)),
        uncompiled=_uncompiled(survey),
        stdout_tail=_tail(survey.stdout_tail),
        stderr_tail=_tail(survey.stderr_tail),
    )


def _absolute(path: str, cwd: str) -> str:
    return os.path.join(cwd, path) if cwd and not os.path.isabs(path) else path


def _displayer(survey: ScriptSurvey) -> Display:
    """The callables' files relative to the script's folder."""
    base = os.path.dirname(_absolute(survey.path, survey.cwd)) or None

    def display(path: str | None) -> str:
        return display_path(_absolute(path, survey.cwd) if path else path, base)

    return display


def _command(survey: ScriptSurvey) -> str:
    script = display_path(_absolute(survey.path, survey.cwd), survey.cwd or None)
    return shlex.join([script, *survey.argv])


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st..."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _unit(survey: ScriptSurvey, hot: CompiledCallable) -> str:
    """What one timed unit of the measured callable is."""
    if survey.unit == "iteration":
        between = (
            "backward and the optimizer run between its calls"
            if hot.backward
            else "what the script runs between its calls is timed with it"
        )
        return f"one loop iteration per timed unit ({between})"
    if survey.unit == "call":
        nth = ordinal(survey.at_call)
        return f"its own call per timed unit, with the arguments of its {nth} call"
    return f"timed unit: {survey.unit}"


def _measured(survey: ScriptSurvey, display: Display) -> str | None:
    hot = survey.hot
    if hot is None:
        return None
    called = f", called at {_place(hot.call_file, hot.call_line, display)}" if hot.call_file else ""
    return (
        f"{hot.name}, compiled at {_place(hot.site_file, hot.site_line, display)} ({hot.kind})"
        f"{called}, {_unit(survey, hot)}"
    )


def _place(file: str, line: int, display: Display) -> str:
    return f"{display(file)}:{line}"


def _ending(survey: ScriptSurvey) -> str:
    """How the survey run ended, and after how long (read after "survey:")."""
    after = f" after {fmt_s(survey.wall_s)} s" if survey.wall_s > 0 else ""
    code = f" (exit code {survey.exit_code})" if survey.exit_code is not None else ""
    if survey.ended == "finished":
        return f"the script ran to its end{code}{after}"
    if survey.ended == "enough_calls":
        return (
            f"stopped the script{after}, once its compiled callables had made enough calls to "
            "choose the one to measure"
        )
    if survey.ended == "budget":
        return f"stopped the script at its time budget{after}"
    if survey.ended == "raised":
        error = f": {survey.error}" if survey.error else ""
        return f"the script raised{after}{error}"
    if survey.ended == "exited":
        return f"the script exited{code}{after}"
    return f"ended: {survey.ended}{code}{after}"


def _share(survey: ScriptSurvey, item: CompiledCallable) -> str:
    return fmt_pct(survey.share(item))


def _others(survey: ScriptSurvey) -> str | None:
    """The compiled callables not measured, most time first, with their shares."""
    others = [c for i, c in enumerate(survey.callables) if i != survey.measured]
    if not others:
        return None
    others.sort(key=lambda c: -c.total_s)
    names = ", ".join(f"{c.name} ({_share(survey, c)})" for c in others)
    plural = "" if len(others) == 1 else "s"
    return f"{len(others)} other compiled callable{plural}: {names}"


def _row(
    survey: ScriptSurvey, index: int, item: CompiledCallable, display: Display
) -> tuple[str, ...]:
    return (
        item.name,
        item.kind,
        _place(item.site_file, item.site_line, display),
        _place(item.call_file, item.call_line, display) if item.call_file else "-",
        str(item.calls),
        fmt_ms(item.total_s * 1e3),
        _share(survey, item),
        MEASURED_MARK if index == survey.measured else "",
    )


def _uncompiled(survey: ScriptSurvey) -> tuple[str, ...]:
    """What the survey saw when the script compiled nothing: where a compile would go."""
    if survey.callables:
        return ()
    out = ["no callable of the script went through torch.compile"]
    if survey.modules_called:
        out.append("modules it called at top level: " + ", ".join(survey.modules_called))
    if survey.loop_calls:
        out.append("functions it called in its loops: " + ", ".join(survey.loop_calls))
    return tuple(out)


def _tail(text: str) -> str:
    """The script's output as a terminal would have left it: of a line rewritten in place
    (`\\r`, a progress bar) its last state; no other control characters (`?` for each); no
    trailing blank lines."""
    lines = text.replace("\r\n", "\n").split("\n")
    shown = [next((p for p in reversed(line.split("\r")) if p), "") for line in lines]
    return without_controls("\n".join(shown)).rstrip()
