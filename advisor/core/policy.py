"""Every threshold that turns a measurement into a judgement, in one place, each with why.

Stages import these rather than keeping numbers of their own, so that what makes a saving
"measured", a change "significant", a run "noisy" or a machine "busy" can be read, and moved,
here. The evidence behind each is in docs/measurement.md (this machine: 2 shared cores).
"""

from __future__ import annotations

import math

# --- a saving within one run (the judge) ---------------------------------------------------
# A saving counts as measured when its 95% interval lies above zero and it reaches this share
# of the step: the spread between processes of one arm is several per cent here, and an
# interval from four processes has three degrees of freedom (`Settings.min_effect`).
MIN_EFFECT = 0.03
# A break whose estimated saving is under this share of the step gets "ignore"
# (`Settings.ignore_share`): below the profiler's resolution of one break's cost.
IGNORE_SHARE = 0.01
# An arm's processes disagree when their levels (each over the reference arm of its wave)
# range over more than this share of their median: one more wave, then a flag.
DISAGREE_SPREAD = 0.25
# An arm whose saving is not yet told from zero, and whose interval still reaches a measurable
# saving ahead of every measured one, gets up to this many more waves, until none is so
# (`advisor.measure.replicate._settle`): sixteen processes in all, what measured the kornia
# CNN's compiled optimizer step (+9.9% [+1.5, +18.4] of the step) where four left it at
# +5.7% +-17%. Each more look is one more chance for a saving with no effect to pass; the rerun
# interval the judge reads (a second run's error and the run-level spread added) keeps one
# look's chance near 0.3%.
SETTLE_WAVES = 12
# Guard evaluation this large a share of the step, with nothing else to fix, is an action.
LARGE_GUARD_SHARE = 0.25
# An output differing from eager's by at most this many times the default mode's own
# difference is the same numerics (the default mode's difference is the dtype's noise).
DIFF_MULTIPLE = 4.0

# --- two runs compared (`advisor compare`, `advisor check`) --------------------------------
COMPARE_ALPHA = 0.05
# A change smaller than this is never called significant: A/A pairs on this machine move by a
# few per cent even across processes (reports/benchmarks/compare_replicated/).
COMPARE_MIN_EFFECT = 0.05
# Two replicated runs differ by more than their processes show: a whole run's level (each
# process over the machine reference) moves with a standard deviation, on the log scale, that
# no process of it reveals. Measured from A/A pairs at one pinned thread: 0.7% for eager, 4.0%
# for the default mode and 3.6% for it over eager, 5% for fullgraph (5 pairs) in the first 20
# (reports/benchmarks/compare_replicated/threads1.json; without it a quarter of A/A pairs were
# called significant); in a second campaign of 24 pairs made after these were set
# (compare_replicated/holdout/threads1.json) 2.9% for eager and 3.8% for the default mode: the
# 1% first set for eager let 3 of those 24 pairs be called significant, all on the eager row.
# Eager's is the two campaigns pooled (44 pairs, method of moments): 2.2%; the compiled modes'
# 4.5% covers both. Each run's mean carries it once in a comparison.
RUN_SPREAD_EAGER = 0.022
RUN_SPREAD_COMPILED = 0.045
# A run whose torch threads took every CPU of the machine waits on whatever else runs there:
# at torch's default threads on this 2-CPU machine the same A/A pairs gave a run-level spread
# of 19-22% (threads0.json), which the one-thread machine reference cannot read out.
RUN_SPREAD_EVERY_CPU = 0.20


def run_spread(mode: str, every_cpu: bool = False) -> float:
    """The run-level spread of a mode's row ("eager", "default", "default / eager", ...), for
    runs that used every CPU of their machine or not."""
    if every_cpu:
        return RUN_SPREAD_EVERY_CPU
    return RUN_SPREAD_EAGER if mode == "eager" else RUN_SPREAD_COMPILED


# A saving's share of the step moves between two runs of the same target by more than its
# waves show. At one pinned thread, four campaigns of `benchmarks.reruns` (three runs of five
# targets each) put that standard deviation at 3.0, 2.0, 1.9 and, since every timed block
# follows an untimed one, 1.3 points of the step: 2.1 pooled over their 292 pairs of runs, and
# 2.5 rounded up to a half point (`benchmarks.run_spread`, reports/benchmarks/run_spread/; the
# A/A runs of reports/benchmarks/compare_replicated/ gave 2.9 for the default mode's saving).
# 11.5 points in the runs at torch's default threads (every CPU). A saving's interval is where
# a rerun would put it, so it carries this once for each of the two runs.
SAVING_RUN_SPREAD = 0.025
SAVING_RUN_SPREAD_EVERY_CPU = 0.115


def saving_spread(every_cpu: bool = False) -> float:
    """The run-level spread of a saving, as a share of the step it is a saving of."""
    return SAVING_RUN_SPREAD_EVERY_CPU if every_cpu else SAVING_RUN_SPREAD


def resolvable_saving(runs: int = 1, every_cpu: bool = False) -> float:
    """The least saving, as a share of the step, that `runs` runs judged together can tell
    from zero where a rerun of as many would put it, from the run-level spread alone (a run's
    waves add their own error)."""
    return resolvable_share(saving_spread(every_cpu), runs)


def resolvable_share(run_spread: float, runs: int = 1) -> float:
    """`resolvable_saving` at a run-level spread of `run_spread`: 1.96 * sqrt(2) * spread /
    sqrt(runs), the 95% point of two such runs' difference."""
    return 1.96 * math.sqrt(2 / max(1, runs)) * run_spread


# --- the machine while measuring ------------------------------------------------------------
# A CPU another process keeps busy more than half the time is held by it (not pinned to).
BUSY_CPU = 0.5
# Others used more than this share of the CPUs a mode was timed on: contended.
CONTENDED_SHARE = 0.10
# A mode's IQR over its median above this: its numbers are flagged uncertain.
NOISY_SPREAD = 0.10


# The allocator what-if (`advisor.measure.allocator`) is planned where the default mode's calls
# page-fault enough that their faults could be worth this share of the call, at this much per
# fault: a minor fault (the kernel maps and zeroes a page) with its knock-on cache and TLB
# misses. Measured here: the convolutional part of a kornia training step, faulting 560 to
# 1,870 times a call in different processes, ran 2.7 to 3.2 us slower per extra fault; the
# lower figure used plans the arm on fewer faults, and the arm's measured saving decides.
PAGE_FAULT_S = 2e-6
ALLOCATOR_PLAN_SHARE = 0.01


def allocator_worth_trying(faults_per_call: float | None, call_s: float | None) -> bool:
    """Whether a call that page-faults `faults_per_call` times in `call_s` seconds could save a
    measurable share from an allocator that keeps freed memory (None: not measured)."""
    if not faults_per_call or not call_s or call_s <= 0:
        return False
    return faults_per_call * PAGE_FAULT_S >= ALLOCATOR_PLAN_SHARE * call_s
