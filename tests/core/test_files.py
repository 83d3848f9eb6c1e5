"""Files written whole or not at all."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from app.core.files import write_atomic


def test_a_write_replaces_the_file_whole_with_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    target.write_text("old")
    write_atomic(target, b"new")
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    write_atomic(target, b"private", mode=0o600)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "proof.json"
    target.write_text("old")

    def no_room(src: str, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("app.core.files.os.replace", no_room)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(target, b"new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["proof.json"]
    monkeypatch.undo()
    with pytest.raises(FileNotFoundError):
        write_atomic(tmp_path / "no" / "folder.json", b"x")
