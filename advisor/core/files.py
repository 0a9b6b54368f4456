"""Writing a file whole or not at all, in two ways: never over an existing one (`write_new`), or
replacing it (`replace_atomically`).

Both write the content to a temporary file in the same folder and flush it to disk; a reader
then sees the old state or the whole new file, never half of one, and a failure leaves no
temporary file behind. `write_new` publishes it with a hard link, which (unlike a rename) fails
when the name exists, so a file written concurrently or earlier is never replaced;
`replace_atomically` renames it over the old one. The temporary file is created with the
permissions a plain `open` would give (umask applied), so the file keeps them once published.
Failures are an `AdvisorError` of one line.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from pathlib import Path

from advisor.core.errors import AdvisorError

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
