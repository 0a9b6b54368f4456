"""A script target's run, before the arms: survey the script in a process of its own, choose
what to measure, and hand the measuring side an ordinary target (the script's path, with its
spec as the `script` parameter) that every process of every protocol loads the same way."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from advisor.core.script import ScriptSurvey
from advisor.measure.pipeline import RunOptions
from advisor.measure.script_survey import survey_script
from advisor.measure.script_target import (
    SURVEY_BUDGET_S,
    measured_spec,
    planned,
    script_params,
)


def surveyed(
    options: RunOptions, progress: Callable[[str], None]
) -> tuple[RunOptions, ScriptSurvey]:
    """The options pinned to the script's measured callable, and the survey that chose it."""
    spec = options.script
    assert spec is not None
    budget = options.settings.timeout_s or SURVEY_BUDGET_S
    progress(f"running {Path(spec.path).name} once to find its compiled callables...")
    survey = planned(spec, survey_script(spec, budget), options.settings)
    pinned = measured_spec(spec, survey)
    hot = survey.hot
    assert hot is not None
    progress(
        f"measuring {hot.name} (compiled at {Path(hot.site_file).name}:{hot.site_line}), "
        f"one {'loop iteration' if survey.unit == 'iteration' else 'call'} per unit"
    )
    return dataclasses.replace(options, params=script_params(pinned), script=pinned), survey


@contextlib.contextmanager
def stdout_muted(mute: bool) -> Iterator[None]:
    """The script's prints (run in this process by the quick protocol) go to /dev/null: the
    advisor's own output is the report."""
    if not mute:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
