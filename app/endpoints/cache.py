"""Answers of a model endpoint kept on disk, so that asking the same again asks nothing.

The model judge (`app.episode.judge`) and the LLM user (`app.users.llm`) both keep
their answers here. An entry is one JSON object, `<folder>/<key[:2]>/<key>.json`, with
at least `answer` (a string) beside whatever the caller records about the request; the
key is the sha256 of everything the answer depends on (`answer_key`). An entry is
written to a temporary file and renamed, so a crash never leaves half an answer.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from app.core.errors import DeskLoopError
from app.core.files import write_atomic


def answer_key(material: dict[str, Any]) -> str:
    """The sha256 of `material` as canonical JSON (sorted keys, text as it is)."""
    blob = json.dumps(material, sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(blob).hexdigest()


class AnswerCache:
    """The answers in `folder`; `what` names the cache in errors ("judge")."""

    def __init__(self, folder: Path, what: str) -> None:
        self.folder = folder
        self.what = what

    def path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def read(self, key: str) -> str | None:
        """The cached answer under `key`, or None when there is none.

        Raises:
            DeskLoopError: the entry cannot be read, is not JSON or has no answer.
        """
        path = self.path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise DeskLoopError(f"{path}: unreadable {self.what} cache entry: {exc}") from None
        answer = data.get("answer") if isinstance(data, dict) else None
        if not isinstance(answer, str):
            raise DeskLoopError(f"{path}: {self.what} cache entry has no answer")
        return answer

    def write(self, key: str, entry: dict[str, Any]) -> None:
        """Keep `entry` (which holds the `answer`) under `key`."""
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Whole or not at all: a crash never leaves half an answer for the next run.
        write_atomic(path, json.dumps(entry, ensure_ascii=False).encode("utf-8"), mode=0o600)
