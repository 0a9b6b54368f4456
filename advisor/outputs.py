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
) -> tuple[Report, Report]:
    """Save the measurements, then judge them and write the report's files. Returns the
    judged report and the report as the files show it (redacted under --redact). A failure
    after the measurements are written is a `RenderFailed` naming the command that renders
    them again."""
    from advisor.judge import judge_saved

    save_measurements(measurements, out_dir, redacted)
    with rejudge_on_failure(out_dir):
        report = judge_saved(measurements, settings)
        written = shown(report, redacted)
        write_rendered(written, out_dir)
    return report, written


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


def write_rendered(report: Report, out_dir: Path) -> None:
    """Every report file, each written whole; a second Ctrl-C cannot cut them off."""
    from advisor.render import report_io

    files = report_io.render_files(report)
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
