"""Writing reports: whole files or none, never over an existing one, and an unwritable folder
found before anything is measured."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from advisor.core.errors import AdvisorError
from advisor.render import report_io


def test_files_are_written_whole_and_no_temporary_file_is_left(tmp_path: Path) -> None:
    out = tmp_path / "new" / "run"
    written = report_io.write_files(out, {"a.txt": "é\n", "b.bin": b"\x00\x01"})
    assert written == [out / "a.txt", out / "b.bin"]
    assert (out / "a.txt").read_text(encoding="utf-8") == "é\n"
    assert (out / "b.bin").read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in out.iterdir()) == ["a.txt", "b.bin"]


def test_an_existing_file_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "report.json").write_text("mine")
    with pytest.raises(AdvisorError, match=r"already holds report\.json"):
        report_io.write_files(tmp_path, {"report.json": "new"})
    assert (tmp_path / "report.json").read_text() == "mine"


def test_a_file_that_appears_while_writing_is_kept(tmp_path: Path) -> None:
    """Between the check and the write another process creates the file: the link refuses."""
    target = tmp_path / "report.json"
    target.write_text("theirs")
    with pytest.raises(AdvisorError, match="never overwritten"):
        report_io.write_new_file(target, "ours")
    assert target.read_text() == "theirs"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_without_hard_links_the_write_falls_back_to_a_checked_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(_src: str, _dst: object) -> None:
        raise OSError(errno.EPERM, "links not supported")

    monkeypatch.setattr(os, "link", no_links)
    report_io.write_new_file(tmp_path / "a.txt", "text")
    assert (tmp_path / "a.txt").read_text() == "text"
    with pytest.raises(AdvisorError, match="never overwritten"):
        report_io.write_new_file(tmp_path / "a.txt", "other")
    assert (tmp_path / "a.txt").read_text() == "text"
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_a_folder_under_a_file_is_found_unwritable_before_measuring(tmp_path: Path) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("")
    with pytest.raises(AdvisorError, match=r"file\.txt is not a folder"):
        report_io.check_writable(blocker / "sub" / "run")


def test_a_read_only_folder_is_found_unwritable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(A real read-only folder does not stop root, who runs the tests here: the probe's
    failure is simulated.)"""

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(report_io.tempfile, "mkstemp", refuse)
    with pytest.raises(AdvisorError, match=r"cannot write to .*: Permission denied"):
        report_io.check_writable(tmp_path / "run")


def test_the_writability_probe_leaves_nothing_behind(tmp_path: Path) -> None:
    report_io.check_writable(tmp_path / "a" / "b")
    assert list(tmp_path.iterdir()) == []
