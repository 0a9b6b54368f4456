"""Whole files or none (advisor.core.files): `write_new` never replaces a file, even one that
appears while it writes; `replace_atomically` replaces one, and a failed replace keeps the old
file. Neither leaves a temporary file behind, and both give a file the permissions a plain
write would (the umask's, not a temporary file's 0600)."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from advisor.core import files
from advisor.core.errors import AdvisorError


def mode_of_a_plain_write(folder: Path) -> int:
    plain = folder / "plain"
    plain.write_text("")
    mode = stat.S_IMODE(plain.stat().st_mode)
    plain.unlink()
    return mode


def test_write_new_writes_text_and_bytes_whole(tmp_path: Path) -> None:
    files.write_new(tmp_path / "a.txt", "é\n")
    files.write_new(tmp_path / "b.bin", b"\x00\x01")
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "é\n"
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.bin"]


def test_a_file_that_appears_while_writing_is_kept(tmp_path: Path) -> None:
    """Between a check and the write another process creates the file: the link refuses."""
    target = tmp_path / "report.json"
    target.write_text("theirs")
    with pytest.raises(AdvisorError, match="never overwritten"):
        files.write_new(target, "ours")
    assert target.read_text() == "theirs"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_without_hard_links_write_new_falls_back_to_a_checked_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(_src: object, _dst: object) -> None:
        raise OSError(errno.EPERM, "links not supported")

    monkeypatch.setattr(os, "link", no_links)
    files.write_new(tmp_path / "a.txt", "text")
    assert (tmp_path / "a.txt").read_text() == "text"
    with pytest.raises(AdvisorError, match="never overwritten"):
        files.write_new(tmp_path / "a.txt", "other")
    assert (tmp_path / "a.txt").read_text() == "text"
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_replace_atomically_replaces_and_leaves_nothing_else(tmp_path: Path) -> None:
    target = tmp_path / "index.json"
    files.replace_atomically(target, "one")
    files.replace_atomically(target, b"two")
    assert target.read_text() == "two"
    assert [p.name for p in tmp_path.iterdir()] == ["index.json"]


def test_a_failed_replace_keeps_the_old_file_and_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "index.json"
    target.write_text("old")

    def refuse(_src: object, _dst: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(
        AdvisorError, match=r"^cannot write .*index\.json: No space left on device$"
    ):
        files.replace_atomically(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["index.json"]


def test_a_write_that_fails_midway_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full_disk(_fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    for write in (files.write_new, files.replace_atomically):
        with pytest.raises(AdvisorError, match="No space left on device"):
            write(tmp_path / "a.txt", "text")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("write", [files.write_new, files.replace_atomically])
def test_written_files_have_the_permissions_of_a_plain_write(
    tmp_path: Path, write: Callable[[Path, str], None]
) -> None:
    write(tmp_path / "a.txt", "text")
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == mode_of_a_plain_write(tmp_path)
