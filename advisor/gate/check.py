"""`advisor check`: a CI gate on what graph breaks cost, against a committed baseline.

A baseline is a small JSON file: per break its identity (registry code, file, line, source
text), its share of the default-mode step and its verdict; the default mode's median, noise,
status, output check and recompiles; whether fullgraph=True compiled. A fresh report is
compared with it and each way it got worse is one `Finding`:

- `new_break`: a break the baseline does not have, costing more than `max_new_share` of the
  step (or whose cost could not be measured);
- `costlier_break`: a known break whose share grew by more than `max_new_share`;
- `slower`: the default mode's median slower by more than `max_slowdown` and by more than the
  noise of either run (the larger relative IQR);
- `recompiles`: more recompiles of the default mode than the baseline had;
- `fullgraph`: fullgraph=True compiled in the baseline and now fails;
- `default_failed`, `mismatch`: the default mode fails, or no longer matches eager.

Breaks are matched by identity, loosest last: the same code, file, line and source; then the
same code, file and source (the line moved); then the same code, source and file name (the
folder moved). Costs are compared as shares of the step, which travel between machines better
than milliseconds; the slowdown check compares milliseconds, so it means something only on the
same kind of machine. Paths are package-relative for installed code and relative to `root`
(the folder `advisor check` runs in, normally the repository root) for the user's own code.

No torch here: it compares records.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

from advisor.core.model import BreakEntry, BreakSite, Report, from_jsonable, to_jsonable
from advisor.core.paths import display_path
from advisor.render import prose

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


@dataclass(frozen=True)
class DefaultMode:
    status: str
    median_ms: float | None = None
    noise: float | None = None  # IQR / median of the timed blocks
    matches_eager: bool | None = None
    recompiles: int = 0


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


@dataclass(frozen=True)
class Thresholds:
    max_new_share: float = 0.02
    max_slowdown: float = 0.10


@dataclass(frozen=True)
class Finding:
    """One way the fresh run is worse than the baseline, as one line."""

    kind: str
    message: str
    file: str | None = None
    line: int | None = None


@dataclass(frozen=True)
class CheckResult:
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = ()  # what got better or stayed within the limits

    @property
    def worse(self) -> bool:
        return bool(self.findings)


# --- making and reading a baseline ------------------------------------------------------------


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
        ),
        fullgraph=fullgraph.status if fullgraph else "absent",
        breaks=tuple(_baseline_break(b, s, root) for b, s in _breaks_of(report)),
        params=report.workload.params,
    )


def _breaks_of(report: Report) -> list[tuple[BreakEntry | None, BreakSite]]:
    """The costed root causes, then every captured site none of them covers (no cost)."""
    covered = {b.id for b in report.breaks} | {c.id for b in report.breaks for c in b.causes}
    return [(b, b.site) for b in report.breaks] + [
        (None, s) for s in report.sites if s.id not in covered
    ]


def _baseline_break(entry: BreakEntry | None, site: BreakSite, root: str) -> BaselineBreak:
    return BaselineBreak(
        gb_code=site.gb_code,
        gb_type=site.gb_type,
        file=gate_path(site.where.file, root),
        line=site.where.line,
        code=site.where.code,
        cost_share=entry.cost_share if entry else None,
        verdict=entry.verdict if entry else None,
        occurrences_per_call=entry.occurrences_per_call if entry else 0.0,
    )


def baseline_to_json(baseline: Baseline) -> str:
    return json.dumps(to_jsonable(baseline), indent=2, allow_nan=False) + "\n"


def baseline_from_json(text: str) -> Baseline:
    """Parse a baseline; ValueError with a one-line reason when it is not one we can read."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict) or "baseline_version" not in data:
        raise ValueError("not an advisor baseline (no baseline_version)")
    if data["baseline_version"] != BASELINE_VERSION:
        raise ValueError(
            f"baseline version {data['baseline_version']!r} is not supported (this advisor "
            f"reads version {BASELINE_VERSION}): make it again with --update-baseline"
        )
    try:
        return from_jsonable(Baseline, data)
    except (TypeError, ValueError, KeyError) as exc:
        raise ValueError(f"malformed baseline: {exc}") from None


# --- comparing --------------------------------------------------------------------------------


def check(baseline: Baseline, report: Report, thresholds: Thresholds, root: str) -> CheckResult:
    """Every way `report` is worse than `baseline`, and notes on what is better."""
    now = baseline_from_report(report, root)
    findings, notes = _check_breaks(baseline, now, report, thresholds)
    findings += _check_default(baseline.default, now.default, thresholds, report.workload.target)
    findings += _check_recompiles(baseline.default, report, root)
    findings += _check_fullgraph(baseline, report, root)
    if now.fullgraph == "ok" and baseline.fullgraph == "failed":
        notes.append("fullgraph=True compiles now (it failed in the baseline)")
    return CheckResult(tuple(findings), tuple(notes))


def match_breaks(
    old: tuple[BaselineBreak, ...], new: tuple[BaselineBreak, ...]
) -> list[tuple[BaselineBreak | None, BaselineBreak]]:
    """Pair each new break with the baseline break it is (None: new), loosest identity last;
    each baseline break pairs at most once."""
    keys = (
        lambda b: (b.gb_code, b.file, b.line, b.code),
        lambda b: (b.gb_code, b.file, b.code),
        lambda b: (b.gb_code, os.path.basename(b.file), b.code),
    )
    unmatched_old = list(old)
    pairs: dict[int, BaselineBreak] = {}
    for key in keys:
        for i, brk in enumerate(new):
            if i in pairs:
                continue
            found = next((o for o in unmatched_old if key(o) == key(brk)), None)
            if found is not None:
                pairs[i] = found
                unmatched_old.remove(found)
    return [(pairs.get(i), brk) for i, brk in enumerate(new)]


def _check_breaks(
    baseline: Baseline, now: Baseline, report: Report, thresholds: Thresholds
) -> tuple[list[Finding], list[str]]:
    """Findings for new and costlier breaks; notes for new cheap ones and the ones gone."""
    findings: list[Finding] = []
    notes: list[str] = []
    pairs = match_breaks(baseline.breaks, now.breaks)
    for (old, new), (entry, _site) in zip(pairs, _breaks_of(report), strict=True):
        finding = _break_finding(old, new, entry, report, thresholds)
        if finding is not None:
            findings.append(finding)
        elif old is None:
            notes.append(
                f"{_where(new)}: new break {_label(new)} costs {_pct(new.cost_share)} of the "
                f"step, within the {_pct(thresholds.max_new_share)} allowed"
            )
    matched = {id(old) for old, _new in pairs if old is not None}
    notes += [
        f"{_where(old)}: break {_label(old)} is gone (`{old.code}`)"
        for old in baseline.breaks
        if id(old) not in matched
    ]
    return findings, notes


def _break_finding(
    old: BaselineBreak | None,
    new: BaselineBreak,
    entry: BreakEntry | None,
    report: Report,
    thresholds: Thresholds,
) -> Finding | None:
    limit = thresholds.max_new_share
    if old is None:
        if new.cost_share is not None and new.cost_share <= limit:
            return None
        cost = (
            f"costs {_pct(new.cost_share)} of the step (limit {_pct(limit)})"
            if new.cost_share is not None
            else "has no measured cost (the default mode was not profiled)"
        )
        fix = recipe_summary(entry, report) if entry is not None else ""
        text = f"new graph break {_label(new)} {cost}: `{new.code}`" + (
            f". Fix: {fix}" if fix else ""
        )
        return Finding("new_break", text, new.file, new.line)
    if new.cost_share is None or old.cost_share is None:
        return None
    if new.cost_share - old.cost_share > limit:
        text = (
            f"graph break {_label(new)} costs more: {_pct(new.cost_share)} of the step, "
            f"{_pct(old.cost_share)} in the baseline (limit +{_pct(limit)}; runs "
            f"{new.occurrences_per_call:g}x per call, {old.occurrences_per_call:g}x before): "
            f"`{new.code}`"
        )
        return Finding("costlier_break", text, new.file, new.line)
    return None


def recipe_summary(entry: BreakEntry, report: Report) -> str:
    """The first sentence of the recipe for the line (after the skipped-frame lead, if any)."""
    if entry.decision is None:
        return ""
    display = _report_display(report)
    lines = [ln for ln in prose.recipe(entry, report, display).splitlines() if ln.strip()]
    if not lines:
        return ""
    main = lines[1] if entry.site.frame_skipped and len(lines) > 1 else lines[0]
    return re.split(r"(?<=[.!?])\s+(?=[A-Z])", main.strip(), maxsplit=1)[0]


def _report_display(report: Report) -> prose.Display:
    from advisor.render.view import displayer

    return displayer(report)


def _check_default(
    old: DefaultMode, new: DefaultMode, thresholds: Thresholds, target: str
) -> list[Finding]:
    if old.status == "ok" and new.status != "ok":
        return [Finding("default_failed", f"{target}: the default torch.compile mode {new.status}")]
    out = []
    if old.matches_eager is True and new.matches_eager is False:
        out.append(Finding("mismatch", f"{target}: default-mode outputs no longer match eager"))
    if old.median_ms and new.median_ms:
        change = new.median_ms / old.median_ms - 1
        noise = max(old.noise or 0.0, new.noise or 0.0)
        if change > thresholds.max_slowdown and change > noise:
            out.append(
                Finding(
                    "slower",
                    f"{target}: default mode is slower: {new.median_ms:.4g} ms per call, "
                    f"{old.median_ms:.4g} ms in the baseline ({change:+.1%}; limit "
                    f"+{_pct(thresholds.max_slowdown)}, noise {_pct(noise)})",
                )
            )
    return out


def _check_recompiles(old: DefaultMode, report: Report, root: str) -> list[Finding]:
    mode = report.mode("default")
    if mode is None or mode.recompiles <= old.recompiles:
        return []
    graphs = {g.compile_id: g for g in report.graphs}
    first = report.recompiles[0] if report.recompiles else None
    graph = graphs.get(first.compile_id) if first else None
    reason = f": {first.compile_id} {first.reason}" if first else ""
    return [
        Finding(
            "recompiles",
            f"{mode.recompiles} recompile(s) of the default mode, {old.recompiles} in the "
            f"baseline{reason}",
            gate_path(graph.file, root) if graph else None,
            min(graph.lines) if graph and graph.lines else None,
        )
    ]


def _check_fullgraph(baseline: Baseline, report: Report, root: str) -> list[Finding]:
    mode = report.mode("fullgraph")
    if baseline.fullgraph != "ok" or mode is None or mode.status != "failed":
        return []
    err = mode.error
    what = (err.gb_type or err.message) if err else "an error"
    code = f" [{err.gb_code}]" if err and err.gb_code else ""
    source = f": `{err.code}`" if err and err.code else ""
    return [
        Finding(
            "fullgraph",
            f"fullgraph=True compiled in the baseline and now fails{code}: {what}{source}",
            gate_path(err.file, root) if err and err.file else None,
            err.line if err else None,
        )
    ]


def _label(brk: BaselineBreak) -> str:
    return f"{brk.gb_code or '?'} ({brk.gb_type})"


def _where(brk: BaselineBreak) -> str:
    return f"{brk.file}:{brk.line}"


def _pct(value: float | None) -> str:
    return "?" if value is None else f"{value * 100:.1f}%"


# --- output -----------------------------------------------------------------------------------


def format_text(result: CheckResult) -> list[str]:
    """One line per finding, `file:line: message` where the finding has a place."""
    return [
        f"{f.file}:{f.line}: {f.message}" if f.file and f.line else f.message
        for f in result.findings
    ]


def format_github(result: CheckResult) -> list[str]:
    """GitHub Actions workflow commands: an `::error` annotation per finding (on its file and
    line when it has one), a `::notice` per note."""
    lines = []
    for f in result.findings:
        props = [f"title={_escape_property('advisor check: ' + f.kind)}"]
        if f.file:
            props.insert(0, f"file={_escape_property(f.file)}")
            if f.line:
                props.insert(1, f"line={f.line}")
        lines.append(f"::error {','.join(props)}::{_escape_data(f.message)}")
    lines += [f"::notice title=advisor check::{_escape_data(n)}" for n in result.notes]
    return lines


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


# --- for tests: costly breaks of one report ---------------------------------------------------


@dataclass(frozen=True)
class CostlyBreak:
    where: str
    label: str
    code: str
    share: float | None
    recipe: str


def costly_breaks(report: Report, max_share: float) -> list[CostlyBreak]:
    """Breaks costing more than `max_share` of the step, or whose cost is unknown."""
    display = _report_display(report)
    out = []
    for entry, site in _breaks_of(report):
        share = entry.cost_share if entry else None
        if share is not None and share <= max_share:
            continue
        recipe = prose.recipe(entry, report, display) if entry and entry.decision else ""
        out.append(
            CostlyBreak(
                where=prose.location(site.where, display),
                label=f"{site.gb_code or '?'} ({site.gb_type})",
                code=site.where.code,
                share=share,
                recipe=recipe,
            )
        )
    return out
