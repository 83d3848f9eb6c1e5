"""Python values as the store's column values: timestamps, JSON texts, capped raw words.

Every write of the store turns its arguments into column values the same way:
timestamps become ISO 8601 UTC text, JSON values become text (refused with a
StoreError naming the field when they cannot be). Kept apart from the writes
themselves, which are SQL over these values, and shared by every part that writes.

What a step keeps of an agent's own words is capped (`cap_raw`): a model may answer
with a megabyte, and a rejected answer is stored raw, step after step. Each text of a
rejected step's action, and of every step's agent info and error, keeps its first
`RAW_TEXT_LIMIT` characters and says so, with its length, where it was cut; a value
whose JSON is still over `RAW_JSON_LIMIT` (thousands of short texts) is kept as the
start of that JSON, noted the same way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from app.core.errors import StoreError

Timestamp = datetime | float
"""An aware datetime, or Unix time in seconds (time.time())."""


def now_utc() -> datetime:
    return datetime.now(UTC)


def iso_text(when: Timestamp | None) -> str:
    """`when` (now when None) as ISO 8601 UTC text, to the microsecond."""
    if when is None:
        when = now_utc()
    elif isinstance(when, int | float):
        when = datetime.fromtimestamp(when, UTC)
    elif when.tzinfo is None:
        raise StoreError(f"timestamp {when.isoformat()} has no time zone; pass an aware datetime")
    return when.astimezone(UTC).isoformat(timespec="microseconds")


RAW_TEXT_LIMIT = 4000
"""Characters kept of one text an agent produced (an answer, a tool call's arguments)."""
RAW_JSON_LIMIT = 64 * 1024
"""Characters kept of a step's whole action or agent info, as JSON."""


def cut_note(length: int, limit: int) -> str:
    """The marker at the end of a capped text: where it was cut and how long it was."""
    return f" [cut by the store at {limit} of {length} characters]"


def cap_raw(value: Any, limit: int = RAW_TEXT_LIMIT) -> Any:
    """`value` with every text over `limit` characters cut there, noted (`cut_note`)."""
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + cut_note(len(value), limit)
    if isinstance(value, Mapping):
        return {key: cap_raw(item, limit) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [cap_raw(item, limit) for item in value]
    return value


def capped_json(value: Mapping[str, Any], what: str) -> str:
    """`value` as JSON text, its texts capped (`cap_raw`) and the whole cut at
    `RAW_JSON_LIMIT`, noted; `what` names it in the error when it is not JSON."""
    text = json_text(cap_raw(dict(value)), what)
    if len(text) <= RAW_JSON_LIMIT:
        return text
    return json_text({"cut": text[:RAW_JSON_LIMIT] + cut_note(len(text), RAW_JSON_LIMIT)}, what)


def json_text(value: Any, what: str) -> str:
    """`value` as JSON text; a StoreError naming `what` when it cannot be."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{what} is not JSON-serializable: {exc}") from None
