"""The closed vocabularies the stages pass each other: what a what-if measured (`WhatIfKind`),
what an action asks of the user (`ActionKind`) and an entry's verdict (`Verdict`).

They are string enums so that saved reports stay byte-identical (a member is its value in JSON,
in f-strings and in dict keys) while a misspelt kind is an error where the record is built, not
a silently unmatched comparison in a renderer. Records coerce the strings they are given
(`coerced`), so a report read back from JSON holds members too.
"""

from __future__ import annotations

import enum
import sys
from typing import TypeVar

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # pragma: no cover - Python 3.10: the same behaviour, spelt out

    class StrEnum(str, enum.Enum):
        def __str__(self) -> str:
            return str(self.value)

        def __format__(self, spec: str) -> str:
            return str(self.value).__format__(spec)


E = TypeVar("E", bound=StrEnum)


class WhatIfKind(StrEnum):
    """What a what-if changed in the default mode before timing it."""

    KNOB = "knob"  # a Dynamo config knob
    GUARDS = "guards"  # the warm default mode without guard evaluation
    REGIONAL = "regional"  # placement: the largest break-free sub-modules compiled, the rest eager
    DISABLE = "disable"  # placement: torch.compiler.disable on the functions holding the breaks
    NOOP = "noop"  # a side effect (print, logging, warnings) made a no-op: what deleting it saves
    SPLIT = "split"  # training: the model and the optimizer step compiled apart, the step eager
    OPTIMIZER = "optimizer"  # training, the model compiled in place: its optimizers' steps too
    STEP = "step"  # training, the model compiled in place: the whole step compiled instead
    MODULE = "module"  # training, the whole step compiled: only the model compiled in place
    FUSED = "fused"  # training, the model compiled in place: the optimizer built fused=True
    FOREACH = "foreach"  # training, the model compiled in place: the optimizer foreach=True
    EAGER_FUSED = "eager_fused"  # training: nothing compiled, the optimizer built fused=True
    UNDISABLE = "undisable"  # a torch.compiler.disable boundary removed: what tracing it saves
    SETTING = "setting"  # a Dynamo setting that changes how the whole step runs
    PATCH = "patch"  # the user's function at a break rewritten, installed in the worker
    ALLOCATOR = "allocator"  # the default mode, the C allocator keeping freed memory (glibc)


class ActionKind(StrEnum):
    """What an action asks the user to do."""

    KNOB = "knob"  # set a Dynamo config knob (measured)
    FULLGRAPH = "fullgraph"  # compile with fullgraph=True (measured)
    REGIONAL = "regional"  # compile the break-free sub-modules instead of the whole (measured)
    DISABLE = "disable"  # torch.compiler.disable the functions holding the breaks (measured)
    SPLIT = "split"  # training: compile the model and the optimizer step apart, the step eager
    OPTIMIZER = "optimizer"  # training: compile the optimizer's step too
    STEP = "step"  # training: compile the whole step (forward, backward, optimizer) at once
    MODULE = "module"  # training: compile only the model in place, the step eager
    FUSED = "fused"  # training: build the optimizer with fused=True
    FOREACH = "foreach"  # training: build the optimizer with foreach=True
    EAGER_FUSED = "eager_fused"  # training: do not compile; build the optimizer with fused=True
    SETTING = "setting"  # a setting for the whole step (compiled autograd)
    ALLOCATOR = "allocator"  # launch with the C allocator keeping freed memory (measured)
    EAGER = "eager"  # do not compile this function: nothing measured beats eager (measured)
    KEEP = "keep"  # nothing to fix: one graph, compiled (measured against eager)
    PATCH = "patch"  # apply a patch to the user's code at the break (generated and measured)
    CODE = "code"  # rewrite or delete the code at the break's line
    ISOLATE = "isolate"  # move the code at the break's line out of the compiled function
    UPSTREAM = "upstream"  # a break in library code: a library change at its line
    GUARDS = "guards"  # skip guard evaluation once warm: unsafe if inputs change
    DYNAMIC = "dynamic"  # mark the changing dimension dynamic
    RECOMPILE = "recompile"  # keep the guarded values stable between calls


class ActionOutcome(StrEnum):
    """Whether an action is something to do, as the judge found it: only `DO` is listed among
    what to do; the rest are said once, apart (what was tried, compile time, nothing to fix)."""

    DO = "do"  # it saves time per call: a measured saving beyond the noise, or an estimate
    SLOWER = "slower"  # measured: it costs time per call
    NO_EFFECT = "no_effect"  # measured: its saving cannot be told from zero
    COMPILE_TIME = "compile_time"  # it changes compile time only (recompiles, dynamic dims)
    NOTHING = "nothing"  # the statement that nothing is worth fixing (or there is no break)


class Verdict(StrEnum):
    """An entry's verdict: worth rewriting, worth moving out, or not worth the effort."""

    REWRITE = "rewrite"
    ISOLATE = "isolate"
    IGNORE = "ignore"


# The placements of torch.compile in a training step that aim at no break, planned from its
# `TrainingStep` (`advisor.measure.training_variants`), breaks or not.
TRAINING_PLACEMENTS = (
    WhatIfKind.OPTIMIZER,
    WhatIfKind.STEP,
    WhatIfKind.MODULE,
    WhatIfKind.FUSED,
    WhatIfKind.FOREACH,
    WhatIfKind.EAGER_FUSED,
)
# What-ifs that compile nothing beyond what the default mode compiles: a longer first call in
# their workers is the machine's noise, not a compile to pay back (no break-even).
ADDS_NO_COMPILE = (
    WhatIfKind.FUSED,
    WhatIfKind.FOREACH,
    WhatIfKind.EAGER_FUSED,
    WhatIfKind.ALLOCATOR,
)


def coerced(kind: type[E], value: str) -> E:
    """`value` as a member of `kind`; a ValueError naming the known values when it is none."""
    try:
        return kind(value)
    except ValueError:
        known = ", ".join(member.value for member in kind)
        raise ValueError(f"unknown {kind.__name__} {value!r} (known: {known})") from None
