"""The result model: plain frozen dataclasses with a versioned JSON round trip.

Records carry facts and numbers; sentences are written by the renderers (`advisor.render`).
Each stage of the pipeline writes its own records and never rewrites another stage's (the
measured ones are defined in `advisor.core.measured`, the judged ones in `advisor.core.judged`;
this module exports them all beside the `Report` that holds them):

- harness:   `ModeResult` (with `LatencyStats`, `ModeError`), `Environment`
- capture:   `GraphRecord`, `BreakSite` (where Dynamo breaks, its registry code, the frames it
             splits), `RecompileRecord`
- what-ifs:  `WhatIf` (one per config knob tried, listing the sites it removed)
- attribute: `Attribution` (per-call segments, the `Calibration` that scaled them)
- advise:    `BreakEntry` (a root cause: its sites, `CostTerms`, `CostParts`, `Savings`,
             `Decision`), `Ledger`, `Action`, `RecompileAdvice`

A report written by this version and loaded again gives an equal object. Fields may be added
(with defaults) without bumping `SCHEMA_VERSION`; renaming or removing a field, or changing its
meaning, bumps it. The JSON renderer (`advisor.render.json_report`) adds documented convenience
fields (each break's `gb_code`, `file`, `line`, `verdict`, `why`, `recipe`, ...; each action's
`title`) that are derived from these records and ignored when the report is read back.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from advisor.core.judged import (
    Action,
    Attribution,
    BreakEntry,
    Calibration,
    CallTimeline,
    CostParts,
    CostTerms,
    Decision,
    GraphSplit,
    Ledger,
    LedgerTerm,
    RecompileAdvice,
    Savings,
    Segment,
)
from advisor.core.kinds import TRAINING_PLACEMENTS as TRAINING_PLACEMENTS
from advisor.core.kinds import ActionKind as ActionKind
from advisor.core.kinds import ActionOutcome as ActionOutcome
from advisor.core.kinds import Verdict as Verdict
from advisor.core.kinds import WhatIfKind as WhatIfKind
from advisor.core.measured import (
    BreakSite,
    Candidate,
    CodeUnit,
    Environment,
    GraphRecord,
    LatencyStats,
    LibraryOption,
    Location,
    ModeError,
    ModeResult,
    Note,
    OutputCheck,
    RankTimings,
    RecompileRecord,
    Replication,
    Settings,
    TrainingStep,
    WhatIf,
    WorkloadInfo,
)
from advisor.core.patch import PATCH_KINDS, FunctionEdit, Patch
from advisor.core.script import CompiledCallable, ScriptSurvey
from advisor.core.serial import dumps, from_jsonable, load_versioned, to_jsonable

# Every record and the round trip: the rest of advisor imports them from here.
__all__ = [
    "MODES",
    "PATCH_KINDS",
    "SCHEMA_VERSION",
    "Action",
    "Attribution",
    "BreakEntry",
    "BreakSite",
    "Calibration",
    "CallTimeline",
    "Candidate",
    "CodeUnit",
    "CompiledCallable",
    "CostParts",
    "CostTerms",
    "Decision",
    "Environment",
    "FunctionEdit",
    "GraphRecord",
    "GraphSplit",
    "LatencyStats",
    "Ledger",
    "LedgerTerm",
    "LibraryOption",
    "Location",
    "ModeError",
    "ModeResult",
    "Note",
    "OutputCheck",
    "Patch",
    "RankTimings",
    "RecompileAdvice",
    "RecompileRecord",
    "Replication",
    "Report",
    "Savings",
    "ScriptSurvey",
    "Segment",
    "Settings",
    "TrainingStep",
    "WhatIf",
    "WorkloadInfo",
    "from_jsonable",
    "report_from_json",
    "report_to_json",
    "to_jsonable",
]

SCHEMA_VERSION = 3

MODES = ("eager", "default", "fullgraph")


# --- the report -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Report:
    workload: WorkloadInfo
    environment: Environment
    settings: Settings
    modes: tuple[ModeResult, ...]
    graphs: tuple[GraphRecord, ...] = ()
    sites: tuple[BreakSite, ...] = ()  # every break the capture saw
    breaks: tuple[BreakEntry, ...] = ()  # root causes, ranked by cost_ms
    what_ifs: tuple[WhatIf, ...] = ()
    ledger: Ledger | None = None
    actions: tuple[Action, ...] = ()
    attribution: Attribution = field(default_factory=Attribution)
    recompiles: tuple[RecompileAdvice, ...] = ()
    warnings: tuple[Note, ...] = ()
    # Graphs split on purpose (DDP's optimizer, one graph per gradient bucket): not breaks.
    splits: tuple[GraphSplit, ...] = ()
    ranks: tuple[RankTimings, ...] = ()  # data-parallel run: every rank's modes
    step_rank: int | None = None  # the rank whose default median is the step (the slowest)
    incomplete: bool = False  # interrupted: only the modes measured so far
    redacted: bool = False  # source text and absolute paths removed (`advisor.core.redact`)
    created_at: str = ""
    wall_s: float | None = None
    script: ScriptSurvey | None = None  # a script target: its survey (argv, compiled callables)
    training: TrainingStep | None = None  # a training step: what it holds (None: not one)
    # the fixes considered for the breaks when the what-ifs were planned, measured or skipped
    candidates: tuple[Candidate, ...] = ()
    schema_version: int = SCHEMA_VERSION

    def mode(self, name: str) -> ModeResult | None:
        return next((m for m in self.modes if m.mode == name), None)

    def what_if(self, knob: str | None) -> WhatIf | None:
        return next((w for w in self.what_ifs if w.knob == knob), None)

    def entry(self, entry_id: str) -> BreakEntry | None:
        return next((b for b in self.breaks if b.id == entry_id), None)


def report_to_json(report: Report) -> str:
    """The records alone; `advisor.render.json_report` adds the documented derived fields."""
    return dumps(report)


def report_from_json(text: str) -> Report:
    """Parse a report; raises ValueError with a one-line reason when it is not one we can read."""
    return load_versioned(
        Report,
        text,
        SCHEMA_VERSION,
        "report",
        "written by an older advisor: run the workload again",
    )
