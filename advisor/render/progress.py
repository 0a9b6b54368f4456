"""What `advisor run` is doing, on stderr, as it goes.

The measuring side reports each stage it begins as one message (a `Callable[[str], None]`);
`Progress` is that callable. On a terminal it keeps one live line at the bottom: the current
stage, the time since the run began and, while the waves run, about how long is left; each
stage that ends stays printed above it with its duration. Anywhere else (a pipe, a CI log,
the tests) and with `live=False` (`--quiet`), it prints the plain `advisor: <message>` lines,
one a stage, as it always has: what reads them keeps working.

The live line is written to a duplicate of the terminal's file descriptor taken at the start,
not to `sys.stderr`: while profiling, the measuring side points descriptor 2 at a file to filter
the profiler's native log lines out, and the live line must neither vanish into that file nor be
replayed from it. It never replaces `sys.stdout` or `sys.stderr` (rich's redirection would), so
what the measuring side captures from them is what the workload wrote. rich (see
docs/dependencies.md) draws the live line: it redraws one line in place, cut to the terminal's
width as the window is resized.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

from rich.console import Console
from rich.live import Live
from rich.text import Text

# a stage that is one wave of the replicated protocol ("wave 2 of 4: 9 arms, ...")
WAVE = re.compile(r"\bwave (\d+) of (\d+)\b")
REFRESH_PER_SECOND = 2  # the elapsed time shows whole seconds: two redraws a second keep it live


def duration(seconds: float) -> str:
    """`4.2 s` under a minute, `3:07` (minutes and seconds) after."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}:{secs:02d}"


def _terminal_of(stream: TextIO) -> TextIO | None:
    """A stream of its own onto the terminal behind `stream`, or None when it is none."""
    try:
        if not stream.isatty():
            return None
        fd = os.dup(stream.fileno())
    except (AttributeError, OSError, ValueError):  # replaced (pytest capture, notebooks), closed
        return None
    return os.fdopen(fd, "w", encoding=getattr(stream, "encoding", None), errors="replace")


class Progress:
    """The measuring side's progress callback; `close()` ends the live line (call it once the
    run is over, interrupted or not). `stream=None` is `sys.stderr` at the time of each call."""

    def __init__(
        self,
        stream: TextIO | None = None,
        live: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self._clock = clock
        self._started = clock()
        self._lock = threading.Lock()
        self._stage: tuple[str, float] | None = None  # the current message and when it began
        self._waves: list[float] = []  # how long each wave that ended took, seconds
        self._terminal = _terminal_of(stream or sys.stderr) if live else None
        self._live: Live | None = None
        if self._terminal is not None:
            console = Console(file=self._terminal, highlight=False, markup=False, emoji=False)
            self._live = Live(
                console=console,
                get_renderable=self._line,
                refresh_per_second=REFRESH_PER_SECOND,
                transient=True,  # at the end the live line goes; the finished lines stay
                redirect_stdout=False,
                redirect_stderr=False,
            )

    @property
    def live(self) -> bool:
        return self._live is not None

    def __call__(self, message: str) -> None:
        if self._live is None:
            print(f"advisor: {message}", file=self._stream or sys.stderr, flush=True)
            return
        self._next((message, self._clock()))

    def _next(self, stage: tuple[str, float] | None, ended_as: str = "done in") -> None:
        """End the current stage and begin `stage`: the live line shows the new stage first,
        then the ended one is printed above it for good, with how long it took (printed the
        other way round, rich would redraw the old live line under it for a moment)."""
        live = self._live
        if live is None:
            return
        with self._lock:
            ended, self._stage = self._stage, stage
            live.start()  # once: a started Live ignores it
            live.refresh()
            if ended is not None:
                seconds = self._clock() - ended[1]
                if WAVE.search(ended[0]):
                    self._waves.append(seconds)
                live.console.print(Text(f"advisor: {ended[0]} {ended_as} {duration(seconds)}"))

    def _line(self) -> Text:
        """The live line, drawn by rich's refresh thread. It reads the stage without the lock:
        `__call__` holds that lock while it prints, which waits for the refresh thread."""
        stage = self._stage
        if stage is None:
            return Text("")
        now = self._clock()
        elapsed = duration(now - self._started)
        left = self._time_left(stage, now)
        line = f"advisor: {stage[0]} ({elapsed} into the run{left})"
        # one line, cut at the edge: rich redraws a live line in place, not a wrapped one
        return Text(line, no_wrap=True, overflow="ellipsis")

    def _time_left(self, stage: tuple[str, float], now: float) -> str:
        """ ", about M:SS left" while the waves run: the waves still to come at the mean length
        of those done (a wave that adds processes for an unsettled saving can run longer)."""
        wave = WAVE.search(stage[0])
        if wave is None or not self._waves:
            return ""
        number, total = int(wave.group(1)), int(wave.group(2))
        mean = sum(self._waves) / len(self._waves)
        left = mean * (total - number) + max(mean - (now - stage[1]), 0.0)
        return f", about {duration(left)} left"

    def close(self, completed: bool = True) -> None:
        """End the live line; the last stage's line says `done` only for a run that completed
        (not for one stopped by Ctrl-C or an error)."""
        if self._live is None:
            return
        if self._stage is not None:
            self._next(None, "done in" if completed else "stopped after")
        self._live.stop()
        self._live = None
        if self._terminal is not None:
            self._terminal.close()
            self._terminal = None
