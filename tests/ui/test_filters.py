"""The Episodes screen's filter language."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.store import EpisodeRecord, Store
from app.ui.filters import parse_filter
from tests.ui.helpers import fixture_db


@pytest.fixture
def episodes(tmp_path: Path) -> list[EpisodeRecord]:
    with Store(fixture_db(tmp_path / "db")) as store:
        return store.list_episodes(limit=None)


@pytest.mark.parametrize(
    ("text", "tasks"),
    [
        ("", {"gimp-flip-export", "gimp-badge-interactive", "blender-add-cube"}),
        ("flip", {"gimp-flip-export"}),
        ("task:BADGE", {"gimp-badge-interactive"}),
        ("user:person", {"gimp-badge-interactive"}),
        ("status:error", {"blender-add-cube"}),
        ("passed:no", {"gimp-flip-export", "blender-add-cube"}),
        ("score<0.5", {"gimp-flip-export"}),
        ("score>=1 agent:reference", {"gimp-flip-export", "gimp-badge-interactive"}),
        ("gimp status:finished score=0.4", {"gimp-flip-export"}),
    ],
)
def test_filters(episodes: list[EpisodeRecord], text: str, tasks: set[str]) -> None:
    keep = parse_filter(text)
    assert {e.task_id for e in episodes if keep(e)} == tasks


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("colour:red", "unknown filter field 'colour'"),
        ("score~1", "score>=0.5"),
        ("passed:maybe", "yes or no"),
    ],
)
def test_bad_filters_name_the_problem(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_filter(text)


def test_tags_and_notes_filter(tmp_path: Path) -> None:
    with Store(fixture_db(tmp_path / "db")) as store:
        ids = {e.task_id: e.id for e in store.list_episodes(limit=None)}
        store.annotate_episode(ids["gimp-flip-export"], note="Cursor drifted", add_tags=["Pilot"])
        store.annotate_episode(ids["blender-add-cube"], add_tags=["pilot", "vm-flaky"])
        episodes = store.list_episodes(limit=None)

    def kept(text: str) -> set[str]:
        keep = parse_filter(text)
        return {e.task_id for e in episodes if keep(e)}

    assert kept("tag:pilot") == {"gimp-flip-export", "blender-add-cube"}
    assert kept("tag:PILOT status:finished") == {"gimp-flip-export"}
    assert kept("tag:vm-flaky") == {"blender-add-cube"}
    assert kept("tag:vm") == set()  # a tag is matched whole, not as a part
    assert kept("note:drift") == {"gimp-flip-export"}


@pytest.mark.parametrize(
    ("text", "error"),
    [("tag:a,b", "tag 'a,b': a tag is one word"), ("note:", "note:WORD")],
)
def test_bad_tag_and_note_filters(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_filter(text)
