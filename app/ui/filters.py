"""The Episodes screen's filter language (no Textual: tested on its own).

Words separated by spaces, all of which must hold:
`task:ID` (substring), `agent:NAME` (substring), `user:person|simulated`,
`status:running|finished|error`, `passed:yes|no`, `tag:WORD` (one of the episode's
tags), `note:WORD` (substring of its note), `score>=0.5` (also >, <=, <, =), and a
bare word, which must appear in the task id.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

from app.core.errors import StoreError
from app.core.vocabulary import EPISODE_STATUSES, USER_MODES
from app.store import EpisodeRecord, normalize_tag

_SCORE = re.compile(r"^score(>=|<=|>|<|=)([0-9]*\.?[0-9]+)$")
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "=": operator.eq,
}
FIELDS = ("task", "agent", "user", "status", "passed", "tag", "note")


@dataclass(frozen=True)
class EpisodeFilter:
    tests: tuple[Callable[[EpisodeRecord], bool], ...] = ()

    def __call__(self, episode: EpisodeRecord) -> bool:
        return all(test(episode) for test in self.tests)


def parse_filter(text: str) -> EpisodeFilter:
    """Parse the filter box's text.

    Raises:
        ValueError: an unknown field or a malformed score comparison, named.
    """
    tests: list[Callable[[EpisodeRecord], bool]] = []
    for word in text.split():
        tests.append(_test(word))
    return EpisodeFilter(tuple(tests))


def _test(word: str) -> Callable[[EpisodeRecord], bool]:
    score = _SCORE.match(word)
    if score:
        op, bound = _OPS[score.group(1)], float(score.group(2))

        def score_test(e: EpisodeRecord) -> bool:
            return e.score is not None and op(e.score, bound)

        return score_test
    if word.startswith("score"):
        raise ValueError(f"{word!r}: write a score test as score>=0.5 (or >, <=, <, =)")
    key, _, value = word.partition(":") if ":" in word else ("task", "", word)
    value = value.lower()
    if key == "task":
        return lambda e: value in e.task_id.lower()
    if key == "agent":
        return lambda e: value in e.agent.lower()  # agent:openai finds openai:gpt-4o
    if key == "user":
        if value not in USER_MODES:
            raise ValueError(f"{word!r}: user is {' or '.join(USER_MODES)}")
        return lambda e: e.user_mode == value
    if key == "status":
        if value not in EPISODE_STATUSES:
            raise ValueError(f"{word!r}: status is {', '.join(EPISODE_STATUSES)}")
        return lambda e: e.status == value
    if key == "passed":
        if value not in ("yes", "no"):
            raise ValueError(f"{word!r}: passed is yes or no")
        wanted = value == "yes"
        return lambda e: bool(e.passed) == wanted
    if key == "tag":
        try:
            tag = normalize_tag(value)
        except StoreError as exc:
            raise ValueError(f"{word!r}: {exc}") from None
        return lambda e: tag in e.tags
    if key == "note":
        if not value:
            raise ValueError(f"{word!r}: write a word the note contains, note:WORD")
        return lambda e: value in e.note.lower()
    raise ValueError(f"unknown filter field {key!r}; known: {', '.join(FIELDS)}, score")
