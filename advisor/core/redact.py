"""`--redact`: a report fit for a public issue, with no source text and no absolute paths.

Pure functions, Report -> Report and Measurements -> Measurements: every output (JSON, Markdown,
HTML, console, the trace, measurements.json) is written from the redacted records, so none of
them can leak what it removed.

- Source text goes: `Location.code`, `ModeError.code` (the lines Dynamo quoted), a patch's
  diff and the text of the functions it edits (its kind, line and names stay).
- Paths become what a reader needs: the user's files relative to the workload's folder (the
  folder the renderers show them relative to anyway), installed code from the package on
  (kept under `.../site-packages/` so it still reads as installed), anything else as
  `.../NAME`. File names, line numbers and function names stay.
- Free text (messages, reasons, hints, warnings, the target and its parameters) keeps its
  words, with every absolute path in it replaced the same way.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from typing import Any

from advisor.core.artifacts import Capture, FrameRecord, Measurements
from advisor.core.model import (
    Action,
    BreakEntry,
    BreakSite,
    GraphRecord,
    LibraryOption,
    Location,
    ModeError,
    ModeResult,
    Note,
    Patch,
    RankTimings,
    RecompileAdvice,
    RecompileRecord,
    Report,
    WhatIf,
    WorkloadInfo,
)
from advisor.core.paths import common_folder
from advisor.core.script import ScriptSurvey

# Installed code from its package folder on (as `paths.package_relative` reads it).
_INSTALLED_TAILS = (
    re.compile(r"[/\\](?:site|dist)-packages[/\\].+$"),
    re.compile(r"[/\\]lib[/\\]python\d+(?:\.\d+)?[/\\].+$"),
)
# An absolute path inside text: a slash (or a drive letter) that no word, dot, colon or slash
# precedes (so not `1/0`, `ms/call`, or the path of an https:// link), then at least two parts.
_PATH_CHARS = r"[^\s'\"`:;,()\[\]{}<>|]"
_ABSOLUTE_IN_TEXT = re.compile(
    rf"(?<![\w.:/\\-])(?:[A-Za-z]:[\\/]|/){_PATH_CHARS}+(?:[\\/]{_PATH_CHARS}+)+"
)


@dataclass(frozen=True)
class Redactor:
    """Redacts paths and text; `base` is the folder of the user's files."""

    base: str | None

    def path(self, path: str | None) -> str | None:
        if not path or not _is_absolute(path):
            return path
        installed = next((m for p in _INSTALLED_TAILS if (m := p.search(path))), None)
        if installed:
            return "..." + installed.group().replace("\\", "/")
        if self.base:
            rel = os.path.relpath(path, self.base) if _same_drive(path, self.base) else ".."
            if not rel.startswith(".."):
                return rel.replace("\\", "/")
        return ".../" + re.split(r"[/\\]", path)[-1]

    def text(self, text: str | None) -> str | None:
        if not text:
            return text
        return _ABSOLUTE_IN_TEXT.sub(lambda m: self.path(m.group()) or "", text)

    def location(self, loc: Location | None) -> Location | None:
        if loc is None:
            return None
        return replace(loc, file=self.path(loc.file) or "", code="")

    def site(self, site: BreakSite) -> BreakSite:
        return replace(
            site,
            where=self.location(site.where),
            reached_from=self.location(site.reached_from),
            also_at=tuple(self.location(a) for a in site.also_at),  # type: ignore[misc]
            via=tuple(self.location(v) for v in site.via),  # type: ignore[misc]
            stack=tuple(self.location(v) for v in site.stack),  # type: ignore[misc]
            option=self.option(site.option),
            explanation=self.text(site.explanation) or "",
            hints=tuple(self.text(h) or "" for h in site.hints),
        )

    def entry(self, entry: BreakEntry) -> BreakEntry:
        return replace(
            entry, site=self.site(entry.site), causes=tuple(self.site(c) for c in entry.causes)
        )

    def mode(self, mode: ModeResult) -> ModeResult:
        if mode.error is None:
            return mode
        err: ModeError = mode.error
        error = replace(
            err, message=self.text(err.message) or "", file=self.path(err.file), code=None
        )
        return replace(mode, error=error)

    def rank(self, timings: RankTimings) -> RankTimings:
        return replace(timings, modes=tuple(self.mode(m) for m in timings.modes))

    def graph(self, graph: GraphRecord) -> GraphRecord:
        return replace(
            graph,
            file=self.path(graph.file) or "",
            recompile_reason=self.text(graph.recompile_reason),
        )

    def what_if(self, what_if: WhatIf) -> WhatIf:
        return replace(
            what_if,
            new_breaks=tuple(self.location(b) for b in what_if.new_breaks),  # type: ignore[misc]
            error=self.text(what_if.error),
            subjects=tuple(replace(u, where=self.location(u.where)) for u in what_if.subjects),
            patch=self.patch(what_if.patch),
        )

    def action(self, action: Action) -> Action:
        return replace(action, where=self.location(action.where), patch=self.patch(action.patch))

    def option(self, option: LibraryOption | None) -> LibraryOption | None:
        if option is None:
            return None
        where = self.location(option.computed_at)
        assert where is not None
        return replace(option, owner_file=self.path(option.owner_file) or "", computed_at=where)

    def patch(self, patch: Patch | None) -> Patch | None:
        """A patch without its source text (the functions' text and the diff): its kind, line,
        edited functions and names stay, so every renderer can still say what it does."""
        if patch is None:
            return None
        return replace(
            patch,
            file=self.path(patch.file) or "",
            edits=tuple(replace(e, before="", after="") for e in patch.edits),
            hunks="",
            setup=(),
            redacted=True,
        )

    def recompile(self, advice: RecompileAdvice | RecompileRecord) -> Any:
        return replace(advice, reason=self.text(advice.reason) or "")

    def note(self, note: Note) -> Note:
        return replace(
            note, subject=self.text(note.subject) or "", detail=self.text(note.detail) or ""
        )

    def frame(self, frame: FrameRecord) -> FrameRecord:
        return replace(frame, file=self.path(frame.file) or "")

    def capture(self, capture: Capture) -> Capture:
        return replace(
            capture,
            graphs=tuple(self.graph(g) for g in capture.graphs),
            sites=tuple(self.site(s) for s in capture.sites),
            recompiles=tuple(self.recompile(r) for r in capture.recompiles),
            frames=tuple(self.frame(f) for f in capture.frames),
            notes=tuple(self.note(n) for n in capture.notes),
        )

    def workload(self, info: WorkloadInfo) -> WorkloadInfo:
        where, sep, factory = info.target.rpartition(":")
        target = (
            f"{self.path(where)}{sep}{factory}"
            if sep and _is_absolute(where)
            else self.text(info.target) or ""
        )
        params = tuple((k, self.text(v) or "") for k, v in info.params)
        return replace(info, target=target, params=params)

    def script(self, survey: ScriptSurvey | None) -> ScriptSurvey | None:
        """A script's paths made relative, its own output dropped (it can hold anything)."""
        if survey is None:
            return None
        callables = tuple(
            replace(
                c, site_file=self.path(c.site_file) or "", call_file=self.path(c.call_file) or ""
            )
            for c in survey.callables
        )
        return replace(
            survey,
            path=self.path(survey.path) or "",
            argv=tuple(self.text(a) or "" for a in survey.argv),
            cwd="",
            callables=callables,
            error=self.text(survey.error) or "",
            stdout_tail="",
            stderr_tail="",
        )


def redact(report: Report) -> Report:
    """The report without source text or absolute paths (see the module docstring)."""
    r = Redactor(_user_folder(report))
    return replace(
        report,
        workload=r.workload(report.workload),
        modes=tuple(r.mode(m) for m in report.modes),
        graphs=tuple(r.graph(g) for g in report.graphs),
        sites=tuple(r.site(s) for s in report.sites),
        breaks=tuple(r.entry(b) for b in report.breaks),
        what_ifs=tuple(r.what_if(w) for w in report.what_ifs),
        actions=tuple(r.action(a) for a in report.actions),
        recompiles=tuple(r.recompile(a) for a in report.recompiles),
        warnings=tuple(r.note(n) for n in report.warnings),
        ranks=tuple(r.rank(t) for t in report.ranks),
        script=r.script(report.script),
        redacted=True,
    )


def redact_measurements(measurements: Measurements) -> Measurements:
    """The measurements without source text or absolute paths, as `redact` does for a report."""
    m = measurements
    r = Redactor(_folder_of([s.where.file for s in m.capture.sites], m.capture.graphs, m.workload))
    return replace(
        m,
        workload=r.workload(m.workload),
        modes=tuple(r.mode(mode) for mode in m.modes),
        capture=r.capture(m.capture),
        what_ifs=tuple(r.what_if(w) for w in m.what_ifs),
        notes=tuple(r.note(n) for n in m.notes),
        ranks=tuple(r.rank(t) for t in m.ranks),
        script=r.script(m.script),
    )


def _user_folder(report: Report) -> str | None:
    """The folder the renderers show the user's files relative to (see `render.view`), or
    the target's folder when no break or graph names a file."""
    return _folder_of([s.where.file for s in report.sites], report.graphs, report.workload)


def _folder_of(
    files: list[str], graphs: tuple[GraphRecord, ...], workload: WorkloadInfo
) -> str | None:
    files = files + [g.file for g in graphs]
    folder = common_folder([f for f in files if _is_absolute(f)])
    if not folder:
        where = workload.target.rpartition(":")[0]
        folder = os.path.dirname(where) if _is_absolute(where) else None
    # Files spread over the whole disk: relative to the root they would show every folder
    # name (a user name among them), so they are shown by name alone.
    if folder is None or os.path.dirname(folder.rstrip("/\\")) == folder.rstrip("/\\"):
        return None
    return folder


def _is_absolute(path: str) -> bool:
    return path.startswith("/") or bool(re.match(r"^[A-Za-z]:[\\/]", path))


def _same_drive(path: str, base: str) -> bool:
    return os.path.splitdrive(path)[0].lower() == os.path.splitdrive(base)[0].lower()
