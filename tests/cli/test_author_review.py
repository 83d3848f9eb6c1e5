"""`author draft` at a terminal asks about each proposed check: accept, edit (the edit
validated as the Author screen validates it), drop, or accept all the rest."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.authoring.review import CheckItem
from app.cli.author_cmd import _review


def _items(n: int) -> list[CheckItem]:
    return [
        CheckItem({"check": "file_exists", "path": f"~/f{i}.png"}, f"made f{i}") for i in range(n)
    ]


def test_each_proposal_is_asked_about(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    answers: Iterator[str] = iter(
        ["e", "{check: file_exists}", "e", "{check: file_exists, path: ~/g.png}", "d", "x", "A"]
    )
    monkeypatch.setattr("builtins.input", lambda _prompt: next(answers))
    items = _items(5)
    _review(items, "ask")
    assert [i.state for i in items] == ["accepted", "dropped", "accepted", "accepted", "accepted"]
    assert items[0].check == {"check": "file_exists", "path": "~/g.png"}
    # The first edit lacked its path: refused, naming the field, and asked again.
    assert "edited check.path" in capsys.readouterr().err


def test_all_and_none_ask_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("builtins.input", lambda _prompt: pytest.fail("asked"))
    kept, dropped = _items(2), _items(2)
    _review(kept, "all")
    _review(dropped, "none")
    assert {i.state for i in kept} == {"accepted"} and {i.state for i in dropped} == {"dropped"}
