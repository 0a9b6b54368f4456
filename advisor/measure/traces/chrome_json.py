"""A Chrome trace (`.json` or `.json.gz`) read one event at a time, never whole.

A profiler trace of a long job runs to gigabytes, nearly all of it events the advisor drops.
The standard library's decoder reads one value from a position in a string (`raw_decode`, in
C), so the file is read in chunks and the `traceEvents` array decoded element by element: the
memory held is a chunk and the event being decoded, whatever the file's size. No third-party
parser is needed for that (ijson would also do it; it is not worth a dependency here).

Both Chrome layouts are read: an object with `traceEvents` among other top-level keys (Kineto
writes `schemaVersion`, `deviceProperties`, `distributedInfo`... around it), and a bare array of
events. Gzip is recognised by its magic bytes, whatever the file is called.
"""

from __future__ import annotations

import gzip
import io
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from advisor.core.errors import AdvisorError, one_line

_CHUNK = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"
_WHITESPACE = " \t\r\n"
_DECODER = json.JSONDecoder()
_LAST_TOKEN = 32  # characters: longer than any number or literal a trace holds
# What reading a broken file raises, for the one-line error: a cut or damaged gzip stream,
# bytes that are not UTF-8, a file that vanished.
_GZIP_ERRORS = (gzip.BadGzipFile, EOFError, zlib.error)
_READ_ERRORS = (OSError, UnicodeDecodeError)


class _Cursor:
    """A position in the text of the file, the text held a chunk at a time."""

    def __init__(self, stream: IO[str], path: Path) -> None:
        self._stream = stream
        self._path = path
        self.text = ""
        self.pos = 0
        self.dropped = 0  # characters consumed and dropped before `text`
        self.eof = False

    def fill(self, size: int | None = None) -> bool:
        """Drop what was consumed and read more; False at the end of the file."""
        if self.eof:
            return False
        try:
            chunk = self._stream.read(size or _CHUNK)
        except _GZIP_ERRORS as exc:
            raise broken(self._path, f"is a truncated or corrupt gzip file ({exc})") from exc
        except _READ_ERRORS as exc:
            raise broken(self._path, f"cannot be read ({type(exc).__name__}: {exc})") from exc
        if not chunk:
            self.eof = True
            return False
        self.dropped += self.pos
        self.text = self.text[self.pos :] + chunk
        self.pos = 0
        return True

    def peek(self) -> str | None:
        """The next character that is not whitespace (None at the end of the file)."""
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in _WHITESPACE:
                self.pos += 1
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.fill():
                return None

    def expect(self, char: str) -> None:
        found = self.peek()
        if found is None:
            raise broken(self._path, f"ends before its closing {char!r} (truncated?)")
        if found != char:
            raise broken(self._path, f"expected {char!r} at character {self.offset()}")
        self.pos += 1

    def value(self) -> Any:
        """The JSON value at the cursor, reading more of the file until it is whole."""
        size = _CHUNK
        while True:
            self.peek()
            try:
                value, end = _DECODER.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                # only a value cut at the end of the text is worth more text; an error inside
                # it is corrupt JSON, raised before the rest of a large file is read
                if _cut_short(exc) and self.fill(size):
                    size *= 2  # a large value: read ahead faster than one chunk a try
                    continue
                raise broken(self._path, _what_went_wrong(exc, self.offset())) from exc
            # a number (or literal) at the end of the text may go on in the next chunk
            if end == len(self.text) and self.fill(size):
                continue
            self.pos = end
            return value

    def offset(self) -> int:
        """Characters from the start of the file to the cursor."""
        return self.dropped + self.pos


def _cut_short(exc: json.JSONDecodeError) -> bool:
    """The decoder ran out of text (rather than met a wrong character): the error lies at the
    end of the text, or within the last token there (a number, `true`, a `\\u` escape cut in
    two is reported where the token starts)."""
    return exc.msg.startswith("Unterminated") or exc.pos >= len(exc.doc.rstrip()) - _LAST_TOKEN


def _what_went_wrong(exc: json.JSONDecodeError, value_at: int) -> str:
    if _cut_short(exc):
        return "ends in the middle of its JSON (truncated?)"
    return f"is not valid JSON ({exc.msg}, in the value at character {value_at})"


def broken(path: Path, why: str) -> AdvisorError:
    return AdvisorError(f"profiler trace {one_line(str(path))} {why}")


class ChromeTrace:
    """A Chrome trace file's events, streamed; its other top-level values in `header`, complete
    once `events()` is exhausted (Kineto writes some of them after the events)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.header: dict[str, Any] = {}

    def events(self) -> Iterator[dict[str, Any]]:
        """Each event object in file order (anything that is not an object is skipped)."""
        with _open(self.path) as stream:
            cursor = _Cursor(stream, self.path)
            first = cursor.peek()
            if first == "[":
                yield from _array(cursor)
            elif first == "{":
                yield from self._object(cursor)
            elif first is None:
                raise broken(self.path, "is empty")
            else:
                raise broken(self.path, "is not a Chrome trace (neither a JSON object nor array)")
            if cursor.peek() is not None:
                raise broken(self.path, "has data after the end of its JSON")

    def _object(self, cursor: _Cursor) -> Iterator[dict[str, Any]]:
        cursor.expect("{")
        seen_events = False
        while cursor.peek() != "}":
            key = cursor.value()
            if not isinstance(key, str):
                raise broken(self.path, f"has a non-string key at character {cursor.offset()}")
            cursor.expect(":")
            if key == "traceEvents":
                seen_events = True
                yield from _array(cursor)
            else:
                self.header[key] = cursor.value()
            if not _comma(cursor, "}"):
                break
        cursor.expect("}")
        if not seen_events:
            raise broken(self.path, "has no traceEvents")


def _array(cursor: _Cursor) -> Iterator[dict[str, Any]]:
    cursor.expect("[")
    while cursor.peek() != "]":
        item = cursor.value()
        if isinstance(item, dict):
            yield item
        if not _comma(cursor, "]"):
            break
    cursor.expect("]")


def _comma(cursor: _Cursor, closing: str) -> bool:
    """Step over the comma after a value; False when the container closes instead. A comma
    right before the closing bracket is tolerated (some writers leave one)."""
    if cursor.peek() == ",":
        cursor.pos += 1
        return cursor.peek() != closing
    return False


def _open(path: Path) -> IO[str]:
    try:
        with open(path, "rb") as raw:
            magic = raw.read(2)
        if magic == _GZIP_MAGIC:
            return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
        return open(path, encoding="utf-8")
    except OSError as exc:
        raise broken(path, f"cannot be opened ({exc.strerror or exc})") from exc
