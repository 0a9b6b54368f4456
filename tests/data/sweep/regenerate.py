"""Write the saved sweep `tests/test_sweep.py` reads: index.json (written by hand, not here)
names four targets (a, b, c ok; d timed out); this writes the reports of a, b and c and the
measurements of a and b.

    .venv/bin/python tests/data/sweep/regenerate.py

The reports are built by hand as typed `Report`s, with round numbers chosen so the zoo's sums,
shares and ranking can be worked out by hand in the tests (`test_aggregation_by_hand`):

- `a` (workload `model_a`): eager 10 ms, default 5, fullgraph 4; a `print(x)` in
  transformers' `modeling_x.py:120` (library code, 0.5 ms, 10% of the step) and a
  data-dependent branch in the user's `/zoo/models/a.py:30` (0.25 ms, 5%); the ledger keeps the
  library break out of the saving (`library_ms`); the first action rewrites the user's branch.
- `b` (`model_b`): eager 8, default 8, fullgraph failed; the same transformers line from another
  virtual environment (2.4 ms, 30%) and a `print(msg)` in transformers' `logging.py:50` that is
  ignored (0.16 ms, 2%); nothing measured removes them, so the saving is 0 and the first action
  is a library change.
- `c` (`model_c`): interrupted (`incomplete`); eager 6, default 3, fullgraph 2; the
  transformers line again (0.6 ms, 20%), removed by fullgraph=True, which bounds the projection
  ("measured").

`a` and `b` also get a measurements.json: the recorded print case (`tests/data/print.*.json`,
as `tests/support/recorded.py` reads it), under their workload names, for
`advisor sweep --rejudge`. Their reports are not what judging those measurements gives (the
reports' numbers are the hand-made ones above), so a re-judged zoo visibly differs.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from advisor.core.artifacts import measurements_to_json  # noqa: E402
from advisor.core.model import (  # noqa: E402
    Action,
    BreakEntry,
    BreakSite,
    Decision,
    Environment,
    LatencyStats,
    Ledger,
    Location,
    ModeResult,
    Report,
    Settings,
    WorkloadInfo,
)
from advisor.render.json_report import render_json  # noqa: E402
from tests.support.recorded import print_case_measurements  # noqa: E402

HERE = Path(__file__).resolve().parent

VENV = "/venv/lib/python3.11/site-packages"
OTHER_VENV = "/other/env/lib/python3.11/site-packages"
MODELING = "transformers/models/x/modeling_x.py"
PRINT_TYPE = "Failed to trace builtin operator"
ENVIRONMENT = Environment("2.13.0+cpu", "3.11.7", "cpu")


def _modes(eager: float, default: float, fullgraph: float | None) -> tuple[ModeResult, ...]:
    def ok(mode: str, median: float) -> ModeResult:
        return ModeResult(mode, "ok", 1.0, LatencyStats(median, 0.0, 5, (median,) * 5))

    last = (
        ok("fullgraph", fullgraph) if fullgraph is not None else ModeResult("fullgraph", "failed")
    )
    return (ok("eager", eager), ok("default", default), last)


def _entry(
    entry_id: str,
    where: Location,
    cost: tuple[float, float],
    decision: tuple[str, str, str],
    gb: tuple[str, str] = ("GB0059", PRINT_TYPE),
    library: bool = True,
) -> BreakEntry:
    """A root cause: `cost` is (ms, share of the step); `decision` (verdict, category, fix)."""
    (cost_ms, share), (verdict, category, fix) = cost, decision
    site = BreakSite(entry_id, gb[0], gb[1], where)
    return BreakEntry(
        id=entry_id,
        site=site,
        occurrences_per_call=1.0,
        cost_ms=cost_ms,
        cost_share=share,
        decision=Decision(
            verdict=verdict,
            category=category,
            fix=fix,
            basis="estimate",
            saving_ms=cost_ms,
            threshold_ms=0.01 * cost_ms / share,
            noise_ms=0.01,
            reason="above" if verdict != "ignore" else "below_noise",
            library=library,
        ),
    )


def _print_at(venv: str) -> Location:
    return Location(f"{venv}/{MODELING}", 120, "forward", "print(x)")


def model_a() -> Report:
    branch = Location("/zoo/models/a.py", 30, "route", "if x.sum() > 0:")
    user = ("GB0170", "Data-dependent branching")
    rewrite = ("rewrite", "data_dependent_branch", "rewrite")
    breaks = (
        _entry("B1", _print_at(VENV), (0.5, 0.10), ("isolate", "print", "isolate")),
        _entry("B2", branch, (0.25, 0.05), rewrite, user, library=False),
    )
    return Report(
        workload=WorkloadInfo("model_a", "/zoo/models/a.py:build", "cpu"),
        environment=ENVIRONMENT,
        settings=Settings(),
        modes=_modes(10.0, 5.0, 4.0),
        sites=tuple(b.site for b in breaks),
        breaks=breaks,
        ledger=Ledger(
            step_ms=5.0,
            compiled_ms=4.0,
            breaks_ms=0.75,
            other_ms=0.25,
            saving_ms=0.25,
            projected_ms=4.75,
            eager_ms=10.0,
            projected_speedup_vs_eager=10.0 / 4.75,
            library_ms=0.5,
        ),
        actions=(
            Action("code", 0.25, breaks=("B2",), fix="rewrite", where=branch, step_ms=4.75),
            Action("upstream", 0.5, breaks=("B1",), where=_print_at(VENV)),
        ),
        created_at="2026-12-01T10:00:00",
    )


def model_b() -> Report:
    logging = Location(f"{OTHER_VENV}/transformers/utils/logging.py", 50, "warn_once", "print(msg)")
    breaks = (
        _entry("B1", _print_at(OTHER_VENV), (2.4, 0.30), ("isolate", "print", "isolate")),
        _entry("B2", logging, (0.16, 0.02), ("ignore", "print", "delete")),
    )
    return Report(
        workload=WorkloadInfo("model_b", "hf:build", "cpu", (("model", '"b"'),)),
        environment=ENVIRONMENT,
        settings=Settings(),
        modes=_modes(8.0, 8.0, None),
        sites=tuple(b.site for b in breaks),
        breaks=breaks,
        ledger=Ledger(
            step_ms=8.0,
            compiled_ms=5.44,
            breaks_ms=2.56,
            other_ms=0.0,
            saving_ms=0.0,
            projected_ms=8.0,
            eager_ms=8.0,
            projected_speedup_vs_eager=1.0,
            library_ms=2.4,
        ),
        actions=(Action("upstream", 2.4, breaks=("B1",), where=_print_at(OTHER_VENV)),),
        created_at="2026-12-01T10:01:00",
    )


def model_c() -> Report:
    breaks = (_entry("B1", _print_at(VENV), (0.6, 0.20), ("isolate", "print", "isolate")),)
    return Report(
        workload=WorkloadInfo("model_c", "hf:build", "cpu", (("model", '"c"'),)),
        environment=ENVIRONMENT,
        settings=Settings(),
        modes=_modes(6.0, 3.0, 2.0),
        sites=tuple(b.site for b in breaks),
        breaks=breaks,
        ledger=Ledger(
            step_ms=3.0,
            compiled_ms=2.4,
            breaks_ms=0.6,
            other_ms=0.0,
            saving_ms=0.6,
            projected_ms=2.0,
            eager_ms=6.0,
            projected_speedup_vs_eager=3.0,
            measured_all_fixed_ms=2.0,
            projection_basis="measured",
            estimated_projected_ms=2.4,
            measured_all_fixed_source="fullgraph",
        ),
        actions=(
            Action(
                "fullgraph", 1.0, measured=True, breaks=("B1",), matches_eager=True, step_ms=2.0
            ),
        ),
        incomplete=True,
        created_at="2026-12-01T10:02:00",
    )


def files() -> dict[str, str]:
    """Relative path -> content, for every file this writes: each target's files in the folder
    named after it, as `advisor sweep` lays them out."""
    reports = {"a": model_a(), "b": model_b(), "c": model_c()}
    out = {f"{target}/report.json": render_json(report) for target, report in reports.items()}
    for target in ("a", "b"):
        measurements = print_case_measurements(reports[target].workload.name, ENVIRONMENT)
        out[f"{target}/measurements.json"] = measurements_to_json(measurements)
    return out


if __name__ == "__main__":
    for relative, content in files().items():
        (HERE / relative).write_text(content, encoding="utf-8")
