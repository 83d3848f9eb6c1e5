"""`deskloop episodes note|tag`, `episodes list --tag` and the note in `episodes show`."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cli import main
from app.store import Store
from tests.recorded_episodes import add_episode


def test_notes_and_tags_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "d.db"
    with Store(db) as store:
        first = add_episode(store, task="gimp-a")
        second = add_episode(store, task="gimp-b")
    base = ["--db", str(db), "episodes"]
    assert main([*base, "note", str(first), "Cursor drifted\nafter step 2"]) == 0
    assert main([*base, "tag", str(first), "Pilot", "wave-1"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"episode {first}: tags: pilot wave-1"
    assert main([*base, "tag", str(second), "wave-1"]) == 0
    assert main([*base, "tag", str(second), "--remove", "wave-1"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"episode {second}: tags: (none)"

    assert main([*base, "show", str(first)]) == 0
    out = capsys.readouterr().out
    assert "tags: pilot wave-1\nnote: Cursor drifted\n      after step 2\n" in out

    assert main([*base, "list", "--tag", "PILOT"]) == 0
    listed = capsys.readouterr().out
    assert "gimp-a" in listed and "gimp-b" not in listed and "pilot wave-1" in listed

    assert main([*base, "tag", str(first), "a b"]) == 2
    assert "tag 'a b': a tag is one word" in capsys.readouterr().err
    assert main([*base, "note", "42", "x"]) == 2
    err = capsys.readouterr().err
    assert "no episode 42" in err and str(db) in err
