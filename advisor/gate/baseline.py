"""The baseline `advisor check` gates on: its schema, how a report becomes one, and its JSON.

A baseline is a small JSON file, committed with the code: per break its identity (registry
code, file, line, source text: `advisor.core.identity`), its share of the default-mode step and
its verdict; the default mode's median, noise, status, output check and recompiles; whether
fullgraph=True compiled. Paths are package-relative for installed code and relative to `root`
(the folder `advisor check` runs in, normally the repository root) for the user's own code.

No torch here: it reads records.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from advisor.core.identity import BreakIdentity
from advisor.core.model import BreakEntry, BreakSite, LatencyStats, Report, to_jsonable
from advisor.core.paths import display_path
from advisor.core.serial import load_versioned_json

BASELINE_VERSION = 1


@dataclass(frozen=True)
class BaselineBreak:
    gb_code: str | None
    gb_type: str
    file: str  # package-relative, or relative to the root the baseline was made in
    line: int
    code: str
    cost_share: float | None = None  # None: captured but not costed (no profile)
    verdict: str | None = None
    occurrences_per_call: float = 0.0

    @property
    def identity(self) -> BreakIdentity:
        return BreakIdentity.from_parts(self.gb_code, self.gb_type, self.file, self.line, self.code)


@dataclass(frozen=True)
class DefaultMode:
    status: str
    median_ms: float | None = None
    noise: float | None = None  # IQR / median of the timed blocks
    matches_eager: bool | None = None
    recompiles: int = 0
    # replicated runs: each worker process's level over the machine reference timed beside it
    # (`Replication.over_machine`), what a slowdown is tested on; () otherwise
    levels: tuple[float, ...] = ()
    every_cpu: bool = False  # its torch threads took every CPU of the machine


@dataclass(frozen=True)
class Baseline:
    target: str
    workload: str
    device: str
    torch: str
    default: DefaultMode
    fullgraph: str  # the mode's status: "ok" | "failed" | "skipped" | "absent"
    breaks: tuple[BaselineBreak, ...] = ()
    params: tuple[tuple[str, str], ...] = ()
    baseline_version: int = BASELINE_VERSION


def gate_path(path: str | None, root: str) -> str:
    """Package-relative for installed code, relative to `root` for code under it."""
    return display_path(path, base=root)


def baseline_from_report(report: Report, root: str) -> Baseline:
    default = report.mode("default")
    if default is None:
        raise ValueError(f"the report of {report.workload.name} has no default mode to gate on")
    fullgraph = report.mode("fullgraph")
    lat = default.latency
    return Baseline(
        target=report.workload.target,
        workload=report.workload.name,
        device=report.workload.device,
        torch=report.environment.torch,
        default=DefaultMode(
            status=default.status,
            median_ms=lat.median_ms if lat else None,
            noise=lat.relative_iqr if lat else None,
            matches_eager=default.matches_eager,
            recompiles=default.recompiles,
            levels=_levels(lat),
            every_cpu=report.environment.every_cpu,
        ),
        fullgraph=fullgraph.status if fullgraph else "absent",
        breaks=tuple(_baseline_break(b, s, root) for b, s in breaks_of(report)),
        params=report.workload.params,
    )


def _levels(lat: LatencyStats | None) -> tuple[float, ...]:
    rep = lat.replication if lat is not None else None
    if rep is None or len(rep.over_machine) != len(rep.process_medians_ms):
        return ()
    return rep.over_machine


def breaks_of(report: Report) -> list[tuple[BreakEntry | None, BreakSite]]:
    """The costed root causes, then every captured site none of them covers (no cost)."""
    covered = {b.id for b in report.breaks} | {c.id for b in report.breaks for c in b.causes}
    return [(b, b.site) for b in report.breaks] + [
        (None, s) for s in report.sites if s.id not in covered
    ]


def _baseline_break(entry: BreakEntry | None, site: BreakSite, root: str) -> BaselineBreak:
    identity = BreakIdentity.of(site, root)
    return BaselineBreak(
        gb_code=site.gb_code,
        gb_type=site.gb_type,
        file=identity.file,
        line=identity.line,
        code=identity.source,
        cost_share=entry.cost_share if entry else None,
        verdict=entry.verdict if entry else None,
        occurrences_per_call=entry.occurrences_per_call if entry else 0.0,
    )


def baseline_to_json(baseline: Baseline) -> str:
    return json.dumps(to_jsonable(baseline), indent=2, allow_nan=False) + "\n"


def baseline_from_json(text: str) -> Baseline:
    """Parse a baseline; ValueError with a one-line reason when it is not one we can read."""

    def unsupported(found: object) -> str:
        return (
            f"baseline version {found!r} is not supported (this advisor "
            f"reads version {BASELINE_VERSION}): make it again with --update-baseline"
        )

    return load_versioned_json(
        Baseline, text, "baseline", "baseline_version", BASELINE_VERSION, unsupported
    )
