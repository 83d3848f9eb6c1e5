"""The one cache of endpoint answers (the judge's and the LLM user's): its keys and its
files are those written before it was shared, so existing caches are still read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.core.errors import DeskLoopError
from app.endpoints.cache import AnswerCache, answer_key

KEY = "9cae12eb6517ccd09dc91d51c25a64c418f603fe88ef7836d3d5174237da75d8"


def test_the_key_is_the_sha256_of_the_canonical_json() -> None:
    # Pinned: a changed key would make every cached answer unreachable.
    material = {"seed": 0, "prompt": [{"role": "user", "content": "é"}], "model": "m"}
    assert answer_key(material) == KEY


def test_an_entry_written_before_is_read(tmp_path: Path) -> None:
    path = tmp_path / KEY[:2] / f"{KEY}.json"
    path.parent.mkdir()
    path.write_text('{"request_key": "x", "model": "m", "answer": "yes"}', encoding="utf-8")
    assert AnswerCache(tmp_path, "judge").read(KEY) == "yes"


def test_written_entries_round_trip_and_missing_ones_are_none(tmp_path: Path) -> None:
    cache = AnswerCache(tmp_path, "LLM user")
    assert cache.read(KEY) is None
    cache.write(KEY, {"task": "t", "answer": "blue"})
    assert json.loads(cache.path(KEY).read_text(encoding="utf-8")) == {
        "task": "t",
        "answer": "blue",
    }
    assert cache.read(KEY) == "blue"
    assert [p.name for p in cache.path(KEY).parent.iterdir()] == [f"{KEY}.json"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "unreadable judge cache entry"),
        ('{"answer": 3}', "judge cache entry has no answer"),
        ("[]", "judge cache entry has no answer"),
    ],
)
def test_a_broken_entry_names_its_file_and_cache(tmp_path: Path, text: str, message: str) -> None:
    cache = AnswerCache(tmp_path, "judge")
    cache.path(KEY).parent.mkdir()
    cache.path(KEY).write_text(text, encoding="utf-8")
    with pytest.raises(DeskLoopError, match=message) as caught:
        cache.read(KEY)
    assert str(cache.path(KEY)) in str(caught.value)
