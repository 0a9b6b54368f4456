"""`advisor run`'s progress on stderr: plain `advisor: <message>` lines off a terminal and with
--quiet (what CI and the tests read), a live line on a terminal that leaves each finished stage
printed with its duration. The terminal is a pseudo-terminal here, read from its other end."""

from __future__ import annotations

import io
import os
import select
import tempfile
from collections.abc import Iterator

import pytest

from advisor.render.progress import Progress, duration


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def terminal() -> Iterator[tuple[io.TextIOWrapper, int]]:
    """A stream onto a pseudo-terminal, and the descriptor its output is read from."""
    pty = pytest.importorskip("pty")
    reader, writer = pty.openpty()
    stream = os.fdopen(writer, "w", encoding="utf-8")
    yield stream, reader
    stream.close()
    os.close(reader)


def read_all(fd: int) -> str:
    chunks = []
    while select.select([fd], [], [], 0.2)[0]:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def test_off_a_terminal_the_plain_lines_as_before() -> None:
    stream = io.StringIO()
    progress = Progress(stream)
    progress("measuring eager...")
    progress("profiling 20 warm calls of the default mode...")
    progress.close()
    assert not progress.live
    assert stream.getvalue() == (
        "advisor: measuring eager...\nadvisor: profiling 20 warm calls of the default mode...\n"
    )


def test_quiet_on_a_terminal_prints_the_plain_lines(terminal: tuple[io.TextIOWrapper, int]) -> None:
    stream, reader = terminal
    progress = Progress(stream, live=False)
    progress("measuring eager...")
    progress.close()
    assert not progress.live
    assert read_all(reader).replace("\r\n", "\n") == "advisor: measuring eager...\n"


def test_on_a_terminal_each_finished_stage_stays_with_its_duration(
    terminal: tuple[io.TextIOWrapper, int],
) -> None:
    stream, reader = terminal
    clock = Clock()
    progress = Progress(stream, clock=clock)
    assert progress.live
    progress("measuring eager...")
    clock.now += 2.0
    progress("profiling...")
    clock.now += 75.0
    progress._live.refresh()  # type: ignore[union-attr]  # the line as the clock ticks
    progress.close()
    out = read_all(reader)
    assert "advisor: measuring eager... done in 2.0 s" in out
    assert "advisor: profiling... (1:17 into the run)" in out  # the live line: since the start
    assert "advisor: profiling... done in 1:15" in out
    progress("after the end")  # the live line is gone: a late message is a plain line
    assert read_all(reader).replace("\r\n", "\n") == "advisor: after the end\n"


def test_a_run_that_did_not_complete_does_not_call_its_last_stage_done(
    terminal: tuple[io.TextIOWrapper, int],
) -> None:
    stream, reader = terminal
    clock = Clock()
    progress = Progress(stream, clock=clock)
    progress("measuring eager...")
    clock.now += 3.0
    progress.close(completed=False)  # Ctrl-C or an error
    out = read_all(reader)
    assert "advisor: measuring eager... stopped after 3.0 s" in out and "done in" not in out


def test_the_live_line_reaches_the_terminal_while_stderr_is_redirected(
    terminal: tuple[io.TextIOWrapper, int],
) -> None:
    """The measuring side points descriptor 2 at a file while it profiles (to filter the
    profiler's native log lines): the live line must not go into that file."""
    stream, reader = terminal
    progress = Progress(stream, clock=Clock())
    with tempfile.TemporaryFile() as sink:
        saved = os.dup(stream.fileno())
        os.dup2(sink.fileno(), stream.fileno())
        try:
            progress("profiling...")
            progress("what-if...")
        finally:
            os.dup2(saved, stream.fileno())
            os.close(saved)
        progress.close()
        sink.seek(0)
        assert sink.read() == b""
    assert "advisor: profiling... done in 0.0 s" in read_all(reader)


def test_durations_read_as_seconds_then_minutes() -> None:
    assert [duration(s) for s in (0.04, 4.24, 59.9, 60.0, 187.0)] == [
        "0.0 s",
        "4.2 s",
        "59.9 s",
        "1:00",
        "3:07",
    ]


def test_the_live_line_says_about_how_long_the_waves_have_left(
    terminal: tuple[io.TextIOWrapper, int],
) -> None:
    stream, reader = terminal
    clock = Clock()
    progress = Progress(stream, clock=clock)
    progress("wave 1 of 4")
    clock.now += 20.0
    progress("wave 2 of 4")
    clock.now += 5.0
    progress._live.refresh()  # type: ignore[union-attr]
    # the waves done took 20 s each: 15 s more of this one, then two more
    assert "(25.0 s into the run, about 55.0 s left)" in read_all(reader)
    progress("judging")  # no wave: no estimate
    progress._live.refresh()  # type: ignore[union-attr]
    progress.close()
    assert "judging (25.0 s into the run)" in read_all(reader)


def test_the_summary_has_colour_on_a_terminal_and_none_elsewhere(
    terminal: tuple[io.TextIOWrapper, int],
) -> None:
    from advisor.render.console import print_summary, render_text
    from tests.support.reports import full_report

    stream, reader = terminal
    report = full_report()
    print_summary(report, stream)
    stream.flush()
    shown = read_all(reader)
    assert "\x1b[1m" in shown  # emphasis (bold) on the terminal
    plain = io.StringIO()
    print_summary(report, plain)
    assert "\x1b" not in plain.getvalue() and plain.getvalue() == render_text(report) + "\n"
