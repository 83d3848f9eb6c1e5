"""`deskloop run --user person` needs the browser view: without `--view browser` it
says so before any desktop starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cli import main
from tests.xterm_task import write_xterm_task


def test_a_person_user_without_a_view_is_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task = write_xterm_task(tmp_path)
    code = main(["--db", str(tmp_path / "db.sqlite"), "run", str(task), "--user", "person"])
    assert code == 2
    assert "add --view browser" in capsys.readouterr().err
