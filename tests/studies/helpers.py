"""Study files for the tests, written from Python values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def write_study(folder: Path, study_id: str = "study", **fields: Any) -> Path:
    """`folder/STUDY_ID.yaml` with its consent file; `fields` replace the defaults
    (two conditions, one block of two tasks)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "consent.md").write_text("# Consent\n\nYou may stop at any time.\n")
    study: dict[str, Any] = {
        "id": study_id,
        "title": "A study",
        "consent": "consent.md",
        "conditions": [
            {"id": "asks", "agent": "reference"},
            {"id": "silent", "agent": "reference", "policy": {"agent_may_ask": False}},
        ],
        "tasks": {"blocks": [["t1", "t2"]]},
    }
    study.update({key: value for key, value in fields.items() if value})
    path = folder / f"{study_id}.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False))
    return path
