"""The alerts a report shows at its top: an interrupted run, a busy machine, noisy modes and
what-ifs, the fullgraph failure and why a mode has no numbers.
"""

from __future__ import annotations

from advisor.core.model import ModeResult, Report, Settings
from advisor.core.policy import CONTENDED_SHARE, NOISY_SPREAD
from advisor.render.formatting import MODE_LABELS, Display, fmt_pct, knob_code
from advisor.render.notes import note_text

# Notes that belong at the top: the thread count the run chose, or one that does not fit.
ALERT_NOTES = ("threads_chosen", "threads_exceed_free")


def alerts(report: Report, display: Display) -> list[str]:
    """Every alert, in the order a reader should see them."""
    out = []
    if report.incomplete:
        out.append("Incomplete: the run was interrupted; only the modes measured so far are here.")
    busy = busy_machine_alert(report)
    if busy:
        out.append(busy)
    out += [note_text(n) for n in report.warnings if n.kind in ALERT_NOTES]
    noisy = noise_alert(report.modes, report.settings)
    if noisy:
        out.append(noisy)
    short = [
        knob_code(w.knob)
        for w in report.what_ifs
        if w.status == "measured" and w.target_met is False
    ]
    if short:  # one alert for all of them: the sentence is the same
        which = "what-if " + _joined(short)
        out.append(
            f"{which}: the medians' 95% intervals did not reach the "
            f"±{report.settings.target_ci * 100:g}% target; "
            f"{'its' if len(short) == 1 else 'their'} measured saving is uncertain."
        )
    finding = fullgraph_finding(report, display)
    if finding:
        out.append(finding)
    out += [
        mode_failure(m, display)
        for m in report.modes
        if m.status in ("failed", "skipped")
        and m.error is not None
        and not (m.mode == "fullgraph" and finding)  # said above, with its break
    ]
    return out


def mode_failure(mode: ModeResult, display: Display) -> str:
    """Why a mode has no numbers: its error type, message and where, if known."""
    label = MODE_LABELS.get(mode.mode, mode.mode)
    err = mode.error
    if err is None:
        return f"{label} {mode.status}"
    if mode.status == "skipped":
        return f"{label} skipped: {err.message}"
    where = f" at {display(err.file)}:{err.line}" if err.file else ""
    return f"{label} failed ({err.type}{where}): {err.message}"


def busy_machine_alert(report: Report) -> str | None:
    """Other work on the machine when measuring began: more runnable threads than CPUs."""
    env = report.environment
    if not env.load_average or not env.cpu_count or env.load_average[0] <= env.cpu_count:
        return None
    advice = (
        "; --threads 1 keeps torch's threads from waiting on each other while descheduled"
        if not report.settings.threads
        else ""
    )
    return (
        f"The machine was busy when measuring began (load average {env.load_average[0]:.2f} "
        f"on {env.cpu_count} CPUs): timings are likely noisy{advice}."
    )


def noise_alert(modes: tuple[ModeResult, ...], settings: Settings) -> str | None:
    """Why the modes' numbers are uncertain (a wide spread, a median whose interval missed the
    target), one alert for all of them (said once), or None when none is."""
    noisy = [
        f"{MODE_LABELS.get(m.mode, m.mode)} ({' and '.join(reasons)})"
        for m in modes
        if (reasons := _noise_reasons(m, settings))
    ]
    if not noisy:
        return None
    # measured (reports/benchmarks/adaptive): on a shared 2-core machine, clean_mlp's IQR was
    # 60-115% with torch's default threads and 2-7% with --threads 1
    hint = (
        " On a shared machine --threads 1 often steadies it (torch's threads stop waiting on "
        "each other when another process takes a CPU)."
        if not settings.threads
        else ""
    )
    # "noisy" and the modes first: a console cuts the line at its width
    them = "it" if len(noisy) == 1 else "them"
    return (
        f"noisy: {_joined(noisy)}; costs, verdicts and comparisons from {them} are uncertain.{hint}"
    )


def _noise_reasons(mode: ModeResult, settings: Settings) -> list[str]:
    lat = mode.latency
    if lat is None:
        return []
    reasons = []
    spread = lat.relative_iqr
    if spread is not None and spread > NOISY_SPREAD:
        reasons.append(f"IQR {fmt_pct(spread)} of its median")
    contended = lat.contention is not None and lat.contention > CONTENDED_SHARE
    if contended:
        reasons.append(
            f"other processes used {fmt_pct(lat.contention)} of its CPUs while it was timed, "
            "so its interval is not taken as met"
        )
    elif lat.target_met is False:
        reasons.append(
            f"its median's 95% interval, ±{fmt_pct(lat.relative_ci)} after {lat.n} blocks, "
            f"missed the ±{settings.target_ci * 100:g}% target"
        )
    return reasons


def _joined(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def fullgraph_finding(report: Report, display: Display) -> str | None:
    mode = report.mode("fullgraph")
    if mode is None or mode.status != "failed" or mode.error is None:
        return None
    err = mode.error
    where = f" at {display(err.file)}:{err.line}" if err.file else ""
    code = f" [{err.gb_code}]" if err.gb_code else ""
    src = f": `{err.code}`" if err.code else ""
    # why before the source line: a console cuts the line at its width
    return f"fullgraph=True fails{code}{where}: {err.gb_type or err.message}{src}"
