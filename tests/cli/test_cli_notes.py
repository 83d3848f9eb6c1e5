"""`deskloop episodes note|tag`, `episodes list --tag`, and what `episodes show` adds:
the note, and who took each step."""

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


def test_episodes_show_marks_the_steps_the_person_took(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.store.helpers import new_episode, step

    db = tmp_path / "d.db"
    with Store(db) as store:
        episode = new_episode(store)
        step(store, episode, 0, description="key(ctrl+s)")
        step(store, episode, 1, description="click(10, 20)", actor="person")
    assert main(["--db", str(db), "episodes", "show", str(episode)]) == 0
    lines = capsys.readouterr().out.splitlines()
    agent = next(line for line in lines if "key(ctrl+s)" in line)
    person = next(line for line in lines if "click(10, 20)" in line)
    assert "person" not in agent
    assert person.split()[:2] == ["1", "person"], person
