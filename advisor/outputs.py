"""What `advisor run` and `advisor judge` write, in the order that keeps a measured run: the
measurements first (atomically), then the judged report's files; a failure in judging or
rendering after that is one line with the command that renders the measurements again."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

from advisor.core.artifacts import Measurements
from advisor.core.errors import RenderFailed
from advisor.core.model import Report, Settings


def save_and_render(
    measurements: Measurements, settings: Settings, out_dir: Path, redacted: bool
) -> Report:
    """Save the measurements, then judge them and write the report's files; the judged report
    (unredacted: the caller shows it through `shown`). A failure after the measurements are
    written is a `RenderFailed` naming the command that renders them again."""
    save_measurements(measurements, out_dir, redacted)
    with rejudge_on_failure(out_dir):
        report = judged(measurements, settings)
        write_rendered(report, out_dir, redacted)
    return report


def judged(measurements: Measurements, settings: Settings) -> Report:
    from advisor.judge import judge, judge_partial

    return (judge_partial if measurements.incomplete else judge)(measurements, settings)


def shown(report: Report, redacted: bool) -> Report:
    """The report as every file shows it: without source text or paths under --redact."""
    if not redacted:
        return report
    from advisor.core.redact import redact

    return redact(report)


def save_measurements(measurements: Measurements, out_dir: Path, redacted: bool) -> None:
    from advisor.render import report_io

    if redacted:
        from advisor.core.redact import redact_measurements

        measurements = redact_measurements(measurements)
    with interrupts_held():
        report_io.save_measurements(measurements, out_dir)


def write_rendered(report: Report, out_dir: Path, redacted: bool) -> None:
    """Every report file, each written whole; a second Ctrl-C cannot cut them off."""
    from advisor.render import report_io

    files = report_io.render_files(shown(report, redacted))
    with interrupts_held():
        report_io.write_files(out_dir, files)


@contextlib.contextmanager
def rejudge_on_failure(out_dir: Path) -> Iterator[None]:
    """A failure in judging or rendering, as one line naming what failed and the command that
    renders the saved measurements again (exit 1); they stay where they were written."""
    try:
        yield
    except Exception as exc:
        raise RenderFailed(exc, out_dir) from exc


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Ignore Ctrl-C for the duration (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
