"""Writing reports: whole files or none, never over an existing one, and an unwritable folder
found before anything is measured (the write itself: tests/test_files.py)."""

from __future__ import annotations

import errno
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
