"""Writing a file whole or not at all, in two ways: never over an existing one (`write_new`), or
replacing it (`replace_atomically`).

Both write the content to a temporary file in the same folder and flush it to disk; a reader
then sees the old state or the whole new file, never half of one, and a failure leaves no
temporary file behind. `write_new` publishes it with a hard link, which (unlike a rename) fails
when the name exists, so a file written concurrently or earlier is never replaced;
`replace_atomically` renames it over the old one. The temporary file is created with the
permissions a plain `open` would give (umask applied), so the file keeps them once published.
Failures are an `AdvisorError` of one line.

Reading is here too (`read_text`, `parse_file`): every file the advisor reads back (a report,
measurements, a baseline, a sweep's files, a manifest) fails in the same one-line words.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from advisor.core.errors import AdvisorError

T = TypeVar("T")

TEMP_PREFIX = ".advisor-"
# Where a file system cannot hard-link (some network and FUSE mounts), fall back to a rename
# after checking the name is free.
_NO_LINK = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK}


def write_new(path: Path, content: str | bytes) -> None:
    """`path` holds `content` whole, or does not exist; an existing `path` is never touched."""
    temp = _write_temp(path, content)
    try:
        _link(temp, path)
    except FileExistsError:
        raise AdvisorError(f"{path} already exists (never overwritten)") from None
    except OSError as exc:
        raise AdvisorError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)


def read_text(path: Path, what: str = "", error: type[AdvisorError] = AdvisorError) -> str:
    """The text of a file (UTF-8); a one-line `error` "cannot read [WHAT ]PATH: why" when it
    cannot be read (missing, a folder, not UTF-8). `what` names the kind of file."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        named = f"{what} " if what else ""
        raise error(f"cannot read {named}{path}: {exc}") from None


def parse_file(path: Path, parse: Callable[[str], T]) -> T:
    """`parse` of a file's text; its ValueError (the parsers' one-line reason) becomes an
    AdvisorError "PATH: reason", and a file that cannot be read one from `read_text`."""
    text = read_text(path)
    try:
        return parse(text)
    except ValueError as exc:
        raise AdvisorError(f"{path}: {exc}") from None


def replace_atomically(path: Path, content: str | bytes) -> None:
    """`path` holds `content` whole, or what it held before (nothing, or the old file)."""
    temp = _write_temp(path, content)
    try:
        os.replace(temp, path)
    except OSError as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise AdvisorError(f"cannot write {path}: {exc.strerror or exc}") from None


def _write_temp(path: Path, content: str | bytes) -> Path:
    """A new file beside `path` holding `content`, flushed to disk."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    try:
        temp, fd = _create_temp(path)
    except OSError as exc:
        raise AdvisorError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        if isinstance(exc, OSError):
            raise AdvisorError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise
    return temp


def _create_temp(path: Path) -> tuple[Path, int]:
    """Like `tempfile.mkstemp`, but with the umask's permissions rather than 0600: the file
    becomes the published one."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _attempt in range(100):
        temp = path.parent / f"{TEMP_PREFIX}{secrets.token_hex(6)}.tmp"
        try:
            return temp, os.open(temp, flags, 0o666)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", str(path.parent))


def _link(temp: Path, path: Path) -> None:
    try:
        os.link(temp, path)
    except OSError as exc:
        if exc.errno not in _NO_LINK:
            raise
        if path.exists():
            raise FileExistsError(path) from None
        os.rename(temp, path)
