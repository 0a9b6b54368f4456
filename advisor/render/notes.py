"""The sentences of notes (`advisor.core.model.Note`): what the stages noticed, worded here.

A note of a kind this version does not know (a newer writer's) is shown by its kind and
fields, never dropped."""

from __future__ import annotations

import re
from collections.abc import Callable

from advisor.core.model import Note


def _pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def _int(note: Note, key: str) -> int:
    return int(note.values.get(key, 0))


def _num(note: Note, key: str) -> float:
    return float(note.values.get(key, 0.0))


_TEXT: dict[str, Callable[[Note], str]] = {
    # harness and timing
    "eager_not_reproducible": lambda n: (
        "eager gives a different output on each call (the workload updates state, e.g. a "
        "training step, or draws random numbers): compiled outputs were not compared with eager"
    ),
    "first_steps_compared": lambda n: (
        f"a training step: each arm's first {_int(n, 'steps')} steps, from the model as built "
        "in its own processes, were compared with eager's (the loss before any update, then "
        "after one); a compiled arm that differs beyond rounding is not counted as a saving"
    ),
    "first_steps_unseeded": lambda n: (
        f"a training step whose first steps differ between eager's {_int(n, 'processes')} "
        "processes (its model or data is built without a fixed seed): compiled arms were not "
        "compared with eager; seed the build (torch.manual_seed) to have them checked"
    ),
    "first_steps_not_compared": lambda n: (
        "a training step whose eager arm reported no first steps: compiled arms were not "
        "compared with eager"
    ),
    "failed_in_warmup": lambda n: f"{n.subject}: failed during warm-up ({n.detail}); not timed",
    "failed_while_timed": lambda n: (
        f"{n.subject}: failed while being timed ({n.detail}); not timed"
    ),
    "budget_short": lambda n: (
        f"the time budget of {_num(n, 'budget_s'):g} s allowed {_int(n, 'rounds')} of "
        f"{_int(n, 'repeats')} rounds; a larger budget gives more samples"
    ),
    "target_missed": lambda n: (
        f"{n.subject}: the 95% interval of the median is ±{_pct(_num(n, 'relative_ci'))} after "
        f"{_int(n, 'blocks')} blocks, short of the ±{_num(n, 'target_ci') * 100:g}% target "
        f"(time budget {_num(n, 'budget_s'):g} s); its numbers are uncertain: give it a larger "
        "budget or measure on a quieter machine"
    ),
    "contended": lambda n: (
        f"other processes used {_pct(_num(n, 'share'))} of the CPUs while {n.subject} were "
        "timed: the threads were descheduled, so no interval of those numbers is called met"
    ),
    "threads_chosen": lambda n: (
        f"{_int(n, 'busy')} of {_int(n, 'cpus')} CPUs were busy with other work when measuring "
        f"began: measured with {_int(n, 'threads')} thread(s) pinned to the free CPU(s), so "
        "torch's threads do not wait on descheduled ones"
    ),
    "threads_exceed_free": lambda n: (
        f"{_int(n, 'threads')} thread(s) were asked for, but {_int(n, 'busy')} of "
        f"{_int(n, 'cpus')} CPUs were busy with other work when measuring began "
        f"({_int(n, 'free')} free): threads that wait on descheduled ones make the timings "
        "slow and noisy"
    ),
    # the replicated protocol
    "blocks_dropped": lambda n: (
        f"{n.subject}: {_int(n, 'blocks')} timed block(s) dropped because it compiled during "
        f"them (a recompile or a cache miss): {n.detail}"
    ),
    "processes_disagree": lambda n: (
        f"{n.subject}: its {_int(n, 'processes')} processes still disagree after one more wave "
        f"(range {_pct(_num(n, 'spread'))} of the median"
        + (f", each over the {n.detail} arm of the same wave" if _num(n, "paired") else "")
        + "): its number is the median of processes that behave differently; rerun it on a "
        "quieter machine before acting on it"
    ),
    # data-parallel ranks
    "ranks_disagree": lambda n: (
        f"the ranks measured different things before {n.subject} (a rank's mode failed, or "
        "its breaks differ): every rank skipped it, so they stay in lockstep"
    ),
    "rank_breaks_differ": lambda n: (
        f"{n.subject}'s breaks differ from rank {_int(n, 'step')}'s (the step's): "
        f"{_int(n, 'missing')} of rank {_int(n, 'step')}'s missing, {_int(n, 'extra')} others "
        "(matched by code, file, line and source)"
    ),
    # capture
    "break_unparsed": lambda n: f"{n.subject}: could not parse a graph-break message",
    "no_compilation_metrics": lambda n: (
        "no compilation_metrics in the structured trace; frame data incomplete"
    ),
    "no_compile_recorded": lambda n: (
        "the structured trace recorded no compile (was the function already compiled, or does "
        "this torch release not emit it?)"
    ),
    "break_without_type": lambda n: f"{n.subject}: break at {n.detail} has no gb_type",
    "compile_without_metrics": lambda n: (
        f"{n.subject}: compile started but no metrics were recorded"
    ),
    "capture_unreadable": lambda n: f"the interrupted capture could not be read: {n.detail}",
    # profile and attribution
    "probe_failed": lambda n: f"the break probe failed to compile: {n.detail}",
    "profile_records_mismatch": lambda n: (
        f"expected {_int(n, 'expected')} call records in a profiler session, found "
        f"{_int(n, 'found')}"
    ),
    "profile_fallback": lambda n: (
        f"{_int(n, 'calls')} of {_int(n, 'of')} profiled calls had more corrected work than the "
        "unprofiled call time; their segments were scaled alike (shares less reliable)"
    ),
    "unknown_regions": lambda n: (
        f"regions in the profile that the capture did not see: {n.subject}"
    ),
    "no_graph_call_markers": lambda n: (
        "no graph-call markers in the profile: region overhead not measured; break costs count "
        "only the eager gaps"
    ),
    "partial_analysis_failed": lambda n: f"analysis of the partial run failed: {n.detail}",
    # read from the files a user's own run left (`advisor trace`)
    "profiled_step_times": lambda n: (
        f"the default mode's times are the {_int(n, 'steps')} profiled steps ({n.subject}) of "
        "your own run, the profiler's overhead included: the files hold no unprofiled timing, "
        "so shares are sound and milliseconds run high by what the profiler costs"
    ),
    # the command first: the console shows a note on one line, cut at the terminal's width
    "estimated_from_files": lambda n: (
        f"to measure these estimates: {n.detail} (every saving here is estimated from your own "
        "run's profile, none measured: nothing was run)"
    ),
    "no_profile": lambda n: (
        "no profiler trace: the breaks are named and located from the TORCH_TRACE log "
        f"(compile time {_num(n, 'compile_s'):.2f} s), not costed; a torch.profiler trace of a "
        "few steps of the same run (a schedule with prof.step(), then export_chrome_trace) "
        "adds each break's cost per step, the ledger and the actions"
    ),
    "no_torch_trace": lambda n: (
        "no TORCH_TRACE folder, so no break is named or costed (none listed does not mean "
        f"none): the profile ran the compiled regions {n.subject} in each step, and which "
        "graph breaks split them, where and why, only the log says; run the job with "
        "TORCH_TRACE=DIR and give DIR as well"
    ),
    "log_truncated": lambda n: (
        f"the TORCH_TRACE log {n.subject} ends mid-record (the process died while writing?): "
        "what it recorded before that is used"
    ),
    "compiled_not_profiled": lambda n: (
        f"compiled in the TORCH_TRACE log but never run in the profiled steps: {n.subject} "
        "(breaks there cost nothing in these steps)"
    ),
    "ranks_not_merged": lambda n: (
        f"the files hold {_int(n, 'ranks')} ranks; this report is rank {_int(n, 'rank')}'s "
        "alone (choose another with --rank): a report merged across ranks is not built yet"
    ),
    # `advisor observe`: the user's script run once by the advisor, its files then read
    "observed_run": lambda n: (
        f"observed: your script ran once ({n.detail}) in {_num(n, 'wall_s'):.2f} s (its own "
        f"wall time, profiling included); {_int(n, 'steps')} calls of {n.subject} profiled after "
        f"{_int(n, 'warmup')} warm calls ({_num(n, 'steps_s') * 1e3:.1f} ms in them; the "
        f"profiler on for {_num(n, 'profile_s'):.2f} s, its export "
        f"{_num(n, 'export_s'):.2f} s)"
    ),
    "observed_ranks_missing": lambda n: (
        f"the profiles of ranks {n.subject} were not written in time: they are left out"
    ),
    # compare
    "environment_differs": lambda n: (
        f"{n.subject} differs ({n.detail}): the comparison measures that too"
    ),
    "busy_run": lambda n: (
        f"the {n.subject} run began on a busy machine (load average {_num(n, 'load'):.2f} on "
        f"{_int(n, 'cpus')} CPUs): run-to-run shifts can exceed the noise it shows; measure both "
        "on a quiet machine"
    ),
    "every_cpu": lambda n: (
        "a run's torch threads took every CPU of its machine: it waits on whatever else runs "
        f"there, and such runs' levels move by about {_pct(_num(n, 'spread'))} from one run to "
        "the next (measured), which the comparison allows for; pin fewer threads "
        "(--threads 1) to find smaller changes"
    ),
    "interval_missed": lambda n: (
        f"{n.subject}: the {n.detail} run's median missed its interval target "
        f"(±{_pct(_num(n, 'relative_ci'))}): its change is uncertain"
    ),
    "too_few_for_drift": lambda n: (
        f"{n.subject}: the {n.detail} run has {_int(n, 'n')} samples, too few for a between-run "
        f"noise estimate ({_int(n, 'epochs')} epochs): only the statistics and the minimum "
        "effect apply"
    ),
    "moved_together": lambda n: (
        "eager changed between the two runs too, in the same direction as the compiled mode: "
        "the machine or the process moved, not only the code; the `/ eager` rows measure each "
        "compiled mode against eager in its own run, which that drift leaves alone"
    ),
    "few_samples": lambda n: (
        f"few samples for {n.subject}: significance tests are weak below {_int(n, 'below')}"
    ),
}


def note_text(note: Note) -> str:
    """The sentence for a note."""
    words = _TEXT.get(note.kind)
    if words is not None:
        return words(note)
    fields = [note.subject, *(f"{k}={v:g}" for k, v in note.values.items()), note.detail]
    return f"{note.kind}: " + "; ".join(f for f in fields if f)


def known_kinds() -> frozenset[str]:
    return frozenset(_TEXT)


# Where a note's repeated tail may start: after a clause ends.
_CLAUSE = re.compile(r"(?:: |; )")
MIN_SHARED_TAIL = 30  # a shorter shared ending is not worth folding


def notes_text(notes: tuple[Note, ...]) -> list[str]:
    """The sentences for the notes, each said once: notes of one kind that end alike (the same
    advice after each subject) are one line, their own parts first and the shared ending once."""
    out: list[str] = []
    by_kind: dict[str, list[str]] = {}
    for note in notes:
        by_kind.setdefault(note.kind, []).append(note_text(note))
    for texts in by_kind.values():
        out += _folded(texts)
    return out


def _folded(texts: list[str]) -> list[str]:
    """`A: tail`, `B: tail` as `A; B: tail`; texts with no shared ending stay apart."""
    first = texts[0]
    for cut in (m.start() for m in _CLAUSE.finditer(first)):
        tail = first[cut:]
        if len(texts) > 1 and len(tail) >= MIN_SHARED_TAIL and all(t.endswith(tail) for t in texts):
            return ["; ".join(t[: -len(tail)] for t in texts) + tail]
    return texts
