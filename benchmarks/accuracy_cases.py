"""The accuracy benchmark's cases: each an advisor run against a measured reference.

- fixed: a scenario (inference or training) against its `fixed` variant. Projected: the
  advisor's saving for the kind of fix the variant applies (`FIX_KIND`), per entry the
  decided saving where the decision took that kind of fix (measured or estimated), else the
  estimate for that kind. Measured: the workload and the fixed variant compiled in one
  process and timed interleaved right after the advisor's run.
- model: a random-init third-party model. Its first action is measured again, independently of
  the advisor's own what-if: the same change (a knob, a placement, a no-op, fullgraph=True,
  not compiling) compiled afresh and timed interleaved against the default mode. Projected: the
  action's saving as the advisor reports it. Where fullgraph=True compiles and is accepted, the
  advisor's all-fixed projection is compared with it too.
- upstream: a package release with graph breaks against the maintainers' release without them
  (benchmarks/upstream), each measured by `advisor run` in its own process (they cannot share
  one). Projected: the old release's saving with every fix; measured: old default - new
  default, raw and against each run's own eager (the eager code changed between the releases
  too, so both are shown).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from advisor import runner
from advisor.core.model import Action, BreakEntry, Report, Settings, WhatIf
from advisor.judge import cost
from advisor.judge.actions import misplaced
from advisor.judge.pipeline import judge
from advisor.measure import cpus, harness, stages, torch_adapter
from advisor.measure import timing as measure_timing
from advisor.measure.pipeline import RunOptions
from advisor.measure.whatif import ab_timing
from advisor.measure.workload import Workload, load_target
from advisor.render import report_io

TOLERANCE = 0.25  # projected within 25% of measured...
NOISE_FACTOR = 3.0  # ...where the measured saving is resolved (see `Case.checked`)
ROOT = Path(__file__).resolve().parent.parent


@dataclasses.dataclass(frozen=True)
class Case:
    set: str  # "scenarios", "training", "upstream", a library's name, "zoo"
    name: str
    half: str = "-"  # "tuning" | "held-out" | "-"
    status: str = "ok"
    reference: str = ""  # what was measured: "fixed variant", "fullgraph", the action...
    projected_ms: float | None = None
    measured_ms: float | None = None
    measured_ci_ms: tuple[float, float] | None = None
    noise_ms: float | None = None
    default_ms: float | None = None  # the advisor run's default median
    reference_default_ms: float | None = None  # the reference A/B's default (baseline) median
    first_action: str | None = None  # its kind
    first_action_ok: bool | None = None
    first_action_why: str = ""
    verdict_ok: bool | None = None  # scenarios: the expected verdict
    passes: str = ""  # a training step's forward / backward / optimizer ms (the ledger's)
    breaks_share: float | None = None  # the breaks' share of the step (their shares summed)
    notes: str = ""

    @property
    def error(self) -> float | None:
        """projected / measured - 1, raw ms."""
        if self.projected_ms is None or not self.measured_ms or self.measured_ms <= 0:
            return None
        return self.projected_ms / self.measured_ms - 1.0

    @property
    def error_share(self) -> float | None:
        """The same on shares of each run's own default median (drift between them cancels)."""
        if self.error is None or not self.default_ms or not self.reference_default_ms:
            return None
        assert self.projected_ms is not None and self.measured_ms is not None
        projected = self.projected_ms / self.default_ms
        return projected / (self.measured_ms / self.reference_default_ms) - 1.0

    @property
    def checked(self) -> bool:
        """The measured saving is resolved from zero: its 95% interval lies above it. The
        spread of the timing samples is no test of that (it does not shrink with more samples),
        so it decides only where there is no interval: the saving above 3x the spread."""
        if self.measured_ms is None or self.measured_ms <= 0:
            return False
        if self.measured_ci_ms is not None:
            return self.measured_ci_ms[0] > 0
        return self.noise_ms is None or self.measured_ms > NOISE_FACTOR * self.noise_ms

    @property
    def within(self) -> bool | None:
        if not self.checked or self.error is None:
            return None
        return abs(self.error) <= TOLERANCE

    @property
    def within_share(self) -> bool | None:
        if not self.checked or self.error_share is None:
            return None
        return abs(self.error_share) <= TOLERANCE


def progress(tag: str) -> runner.Progress:
    return lambda message: print(f"[{tag}] {message}", file=sys.stderr, flush=True)


def advisor_run(target: str, settings: Settings, params: dict[str, Any] | None = None,
                save_to: Path | None = None) -> Report:  # fmt: skip
    """The advisor's run of `target`; its report and measurements saved in `save_to` (so a
    table of its what-ifs, or a judge with other rules, needs no run again)."""
    options = RunOptions(target, "cpu", settings, params=tuple((params or {}).items()))
    result = runner.run(options, progress(target.rsplit("/", 1)[-1]))
    if save_to is not None:
        report_io.save_report(result.report, save_to, result.measurements)
    return result.report


def passes_of(report: Report) -> str:
    """forward (and the rest) / backward / optimizer ms of a training step's default mode."""
    ledger = report.ledger
    if ledger is None or (ledger.backward_ms is None and ledger.optimizer_ms is None):
        return ""
    backward, optimizer = ledger.backward_ms or 0.0, ledger.optimizer_ms or 0.0
    forward = ledger.step_ms - backward - optimizer
    return f"fwd {forward:.3f} / bwd {backward:.3f} / opt {optimizer:.3f}"


def breaks_share(report: Report) -> float | None:
    ledger = report.ledger
    return ledger.breaks_ms / ledger.step_ms if ledger and ledger.step_ms else None


def default_ms(report: Report) -> float | None:
    mode = report.mode("default")
    return mode.latency.median_ms if mode and mode.latency else None


# --- scenarios against their fixed variants -----------------------------------------------------


def projected_for_fix(report: Report, fix_kind: str | None) -> float:
    """The advisor's saving for fixing every entry with this kind of fix."""
    if fix_kind is None:
        return sum(e.cost_ms for e in report.breaks)
    return sum(_entry_saving(e, fix_kind) for e in report.breaks)


def _entry_saving(entry: BreakEntry, fix_kind: str) -> float:
    decided = entry.decision
    if decided is not None and decided.basis == "measured" and decided.fix in (fix_kind, "knob"):
        return entry.cost_ms
    return cost.saving_for(cost.savings_of(entry.parts, entry.terms, (fix_kind,)), fix_kind) or 0.0


def fixed_case(set_name: str, scenario: str, settings: Settings, runs: Path | None,
               saved: Path | None = None) -> Case:  # fmt: skip
    """`saved`: a sweep's measurements.json of the scenario, judged with today's rules
    instead of running the advisor again (the fixed variant is measured all the same)."""
    module = importlib.import_module(f"scenarios.{scenario}")
    if saved is not None:
        report = judge_saved(saved)
    else:
        report = advisor_run(scenario, settings, save_to=runs / scenario if runs else None)
    fix_kind = getattr(module, "FIX_KIND", None)
    with cpus.pinned(settings.threads):
        ab = _fixed_ab(scenario, settings)
    first = report.actions[0] if report.actions else None
    return Case(
        set=set_name,
        name=scenario,
        reference=f"fixed variant ({fix_kind or 'no fix'})",
        projected_ms=projected_for_fix(report, fix_kind),
        measured_ms=ab.saving_ms,
        measured_ci_ms=(ab.saving_low_ms, ab.saving_high_ms),
        noise_ms=max(ab.baseline.iqr_ms, ab.variant.iqr_ms),
        default_ms=default_ms(report),
        reference_default_ms=ab.baseline.median_ms,
        first_action=first.kind if first else None,
        verdict_ok=_verdict_ok(report, module),
        passes=passes_of(report),
        breaks_share=breaks_share(report),
        notes="judged from a saved sweep" if saved else "",
    )


def _fixed_ab(name: str, settings: Settings) -> Any:
    broken = load_target(name, "cpu")
    fixed = load_target(f"scenarios/{name}.py:fixed", "cpu")
    torch_adapter.reset_dynamo()

    def warm(wl: Workload, label: str) -> Any:
        call = harness.compiled_call(wl, torch_adapter.InductorBackend(label), False)
        for _ in range(3):
            call()
        return call

    timer = measure_timing.timer_for("cpu")
    ab = ab_timing(warm(broken, "broken"), warm(fixed, "fixed"), settings, timer)
    torch_adapter.reset_dynamo()
    return ab


def _verdict_ok(report: Report, module: Any) -> bool:
    expected = module.EXPECTED_VERDICT
    action = getattr(module, "EXPECTED_ACTION", None)
    if action is not None:
        return action in [a.kind for a in report.actions]
    if module.EXPECTED_GB_CODE is None:
        return not [e for e in report.breaks if e.verdict != "ignore"]
    name = module.__name__.rsplit(".", 1)[-1]
    for e in report.breaks:
        where = e.site.where
        if e.site.gb_code == module.EXPECTED_GB_CODE and where.line == module.EXPECTED_LINE:
            if where.file.endswith(f"{name}.py"):
                return e.verdict == expected
    return False


# --- real models: the first action measured again -----------------------------------------------


def model_case(set_name: str, name: str, half: str, target: str, params: dict[str, Any],
               settings: Settings, saved: Path | None, runs: Path | None) -> Case:  # fmt: skip
    """`saved`: a sweep's measurements.json of this model, judged with today's rules instead
    of running the advisor again (the first action is measured again all the same)."""
    save_to = runs / f"{set_name}-{name}" if runs else None
    try:
        report = judge_saved(saved) if saved else advisor_run(target, settings, params, save_to)
    except Exception as exc:  # a model that does not run is a row, not the end of the run
        return Case(set_name, name, half, status=f"failed: {type(exc).__name__}: {exc}"[:160])
    notes = "judged from a saved sweep" if saved else ""
    base = Case(set_name, name, half, default_ms=default_ms(report), notes=notes,
                passes=passes_of(report), breaks_share=breaks_share(report))  # fmt: skip
    if not report.actions:
        return dataclasses.replace(base, reference="no action", first_action="-")
    first = report.actions[0]
    case = dataclasses.replace(base, first_action=first.kind, reference=f"{first.kind}")
    if first.saving_ms is not None:
        try:
            with cpus.pinned(settings.threads):
                measured = remeasure(first, report, target, params, settings)
        except Exception as exc:  # the reference that does not run is a note on the row
            measured = {"notes": f"measuring it again failed: {type(exc).__name__}: {exc}"[:200]}
        case = dataclasses.replace(
            case,
            reference=f"{first.kind} measured again",
            projected_ms=first.saving_ms,
            **{**measured, "notes": "; ".join(filter(None, [notes, measured.get("notes")]))},
        )
    ok, why = first_action_judgement(report, first, case)
    return dataclasses.replace(case, first_action_ok=ok, first_action_why=why)


def judge_saved(path: Path) -> Report:
    measurements = report_io.load_measurements(path)
    if measurements.incomplete:
        raise RuntimeError("the saved run was interrupted")
    return judge(measurements)


def remeasure(action: Action, report: Report, target: str, params: dict[str, Any],
              settings: Settings) -> dict[str, Any]:  # fmt: skip
    """The action's change compiled afresh and timed interleaved against the default mode."""
    workload = load_target(target, "cpu", params)
    torch_adapter.reset_dynamo()
    try:
        if action.kind in ("eager", "fullgraph"):
            ab = _mode_ab(workload, action.kind, settings)
        else:
            ab = _what_if_ab(workload, action, report, settings)
    finally:
        torch_adapter.reset_dynamo()
    if ab is None:
        return {"notes": f"{action.kind}: no independent measurement of it"}
    saving, ci, noise, baseline = ab
    return {
        "measured_ms": saving,
        "measured_ci_ms": ci,
        "noise_ms": noise,
        "reference_default_ms": baseline,
    }


def _mode_ab(workload: Workload, kind: str, settings: Settings) -> tuple[Any, ...]:
    default = harness.compiled_call(workload, torch_adapter.InductorBackend("ref-default"), False)
    other = (
        workload.__call__
        if kind == "eager"
        else harness.compiled_call(workload, torch_adapter.InductorBackend("ref-full"), True)
    )
    for _ in range(3):
        default()
        other()
    ab = ab_timing(default, other, settings, measure_timing.timer_for("cpu"))
    noise = max(ab.baseline.iqr_ms, ab.variant.iqr_ms)
    return ab.saving_ms, (ab.saving_low_ms, ab.saving_high_ms), noise, ab.baseline.median_ms


def _what_if_ab(workload: Workload, action: Action, report: Report,
                settings: Settings) -> tuple[Any, ...] | None:  # fmt: skip
    sites = report.sites
    wanted = {"knob": action.knob, "code": None, "isolate": None}.get(action.kind, action.kind)
    plans = stages.what_if_plan(sites)
    plan = next((p for p in plans if wanted in (p.kind, p.knob.name if p.knob else None)), None)
    if plan is None and action.kind in ("code", "isolate", "upstream") and action.measured:
        plan = next((p for p in plans if _removes(p, action)), None)
    if plan is None:
        return None
    reference = harness.eager_reference(workload, [])
    w = stages.measure_what_if(workload, plan, reference, settings, "cpu", sites)
    if w.status != "measured" or w.saving_ms is None or w.saving_ci_ms is None:
        return None
    return w.saving_ms, w.saving_ci_ms, None, w.baseline_ms


def _removes(plan: stages.WhatIfPlan, action: Action) -> bool:
    """A no-op or un-disable plan aimed at a break the action removes."""
    return plan.kind in ("noop", "undisable") and any(t.id in action.breaks for t in plan.targets)


def first_action_judgement(report: Report, first: Action, case: Case) -> tuple[bool, str]:
    """Right when it names a line the user can act at (`misplaced`), it is safe where the
    model has breaks, not compiling was not faster than the step after it, its change saves
    something beyond noise when measured again, and "nothing to fix" is not said over a
    measured win."""
    wrong = misplaced((first,), report.breaks)
    if wrong:
        return False, wrong[0][1]
    if not first.safe and report.breaks:
        return False, "an unsafe action first on a model with breaks"
    eager, default = report.mode("eager"), report.mode("default")
    if first.kind != "eager" and eager and eager.latency and default and default.latency:
        step_after = first.step_ms if first.step_ms is not None else default.latency.median_ms
        if eager.latency.median_ms < 0.95 * step_after:
            return False, "eager is faster than the step after it"
    if case.measured_ci_ms is not None and case.measured_ci_ms[1] <= 0:
        return False, "measured again, it saves nothing"
    if first.kind == "keep":
        won = [w.knob for w in report.what_ifs if _clear_win(w)]
        if won:
            return False, f"nothing to fix, but {won[0]} measured a saving"
    return True, ""


def _clear_win(what_if: WhatIf) -> bool:
    ci = what_if.saving_ci_ms
    return (
        what_if.status == "measured"
        and what_if.kind != "guards"  # unsafe: not a win "nothing to fix" overlooks
        and ci is not None
        and ci[0] > 0
        and what_if.matches_eager is not False
    )


# --- an upstream fix between two releases -------------------------------------------------------


def upstream_case(package: str, settings: Settings, threads: int, runs: Path | None) -> Case:
    reports = {}
    for release in ("old", "new"):
        out = (runs or Path(tempfile.mkdtemp(prefix="advisor-upstream-"))) / f"{package}-{release}"
        reports[release] = _run_release(package, release, settings, threads, out)
        if reports[release] is None:
            return Case("upstream", package, status=f"failed: the {release} release did not run")
    old, new = reports["old"], reports["new"]
    assert old is not None and new is not None
    old_ms, new_ms = default_ms(old), default_ms(new)
    ledger = old.ledger
    if old_ms is None or new_ms is None or ledger is None:
        return Case("upstream", package, status="failed: no default-mode median")
    old_mode, new_mode = old.mode("default"), new.mode("default")
    noise = max(
        old_mode.latency.iqr_ms if old_mode and old_mode.latency else 0.0,
        new_mode.latency.iqr_ms if new_mode and new_mode.latency else 0.0,
    )
    eager_note = _eager_note(old, new)
    return Case(
        set="upstream",
        name=package,
        reference="the new release's default mode (its own process)",
        projected_ms=ledger.saving_ms,
        measured_ms=old_ms - new_ms,
        noise_ms=noise,
        default_ms=old_ms,
        reference_default_ms=old_ms,
        first_action=old.actions[0].kind if old.actions else None,
        notes=eager_note,
    )


def _run_release(package: str, release: str, settings: Settings, threads: int,
                 out: Path) -> Report | None:  # fmt: skip
    command = [
        sys.executable, "-m", "advisor", "run", "benchmarks/upstream/models.py:build",
        "--param", f"release={release}", "--param", f"package={package}",
        "--out", str(out), "--quiet", "--threads", str(threads),
        "--repeats", str(settings.repeats), "--budget", str(settings.budget_s),
        "--profile-calls", str(settings.profile_calls),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
        return None
    return report_io.load_report(out)


def _eager_note(old: Report, new: Report) -> str:
    eo, en = old.mode("eager"), new.mode("eager")
    if not (eo and eo.latency and en and en.latency):
        return ""
    do, dn = default_ms(old), default_ms(new)
    if not do or not dn:
        return ""
    relative = do / eo.latency.median_ms - dn / en.latency.median_ms
    return (
        f"eager {eo.latency.median_ms:.3f} -> {en.latency.median_ms:.3f} ms; default/eager "
        f"{do / eo.latency.median_ms:.2f} -> {dn / en.latency.median_ms:.2f} "
        f"(against each run's eager the saving is {relative * eo.latency.median_ms:.3f} ms)"
    )


def case_json(case: Case) -> dict[str, Any]:
    data = dataclasses.asdict(case)
    data.update(
        error=case.error,
        error_share=case.error_share,
        within=case.within,
        within_share=case.within_share,
    )
    return json.loads(json.dumps(data, default=str))


def case_from_json(data: dict[str, Any]) -> Case:
    """A case back from `case_json` (the derived fields are computed again)."""
    fields = {f.name for f in dataclasses.fields(Case)}
    values = {k: v for k, v in data.items() if k in fields}
    if values.get("measured_ci_ms") is not None:
        values["measured_ci_ms"] = tuple(values["measured_ci_ms"])
    return Case(**values)
