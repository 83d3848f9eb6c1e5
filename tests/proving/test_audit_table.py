"""`tasks audit`'s table: what each cell says. The runs themselves need
desktops (tests/episode/test_integrity_desktop.py); a task without a cheater needs none."""

from __future__ import annotations

from pathlib import Path

from app.proving.audit import Check, TaskAudit, _cheater, audit_json, audit_table, cheater_path
from app.store import Store
from app.tasks.loader import load_task

ROOT = Path(__file__).resolve().parents[2]


async def test_a_task_without_a_cheater_says_so_in_the_cheater_column(tmp_path: Path) -> None:
    task = load_task(ROOT / "tasks" / "gimp" / "gimp-flip-export.yaml")
    assert cheater_path(task) is None
    said: list[str] = []
    with Store(tmp_path / "lab.db") as store:
        cheater = await _cheater(task, store, "local", said.append)
        assert store.list_episodes(limit=None) == []  # nothing was run
    audit = TaskAudit(task, [Check("reference 1", True, "score 1.00", 4), cheater])
    assert audit.ok  # no cheater is no failure
    assert audit_table([audit]) == (
        ["task", "reference 1", "cheater", "audit"],
        [["gimp-flip-export", "ok #4", "none", "ok"]],
    )
    row = audit_json(audit)["checks"][1]
    assert (row["ok"], row["ran"], row["reason"]) == (True, False, "no cheater for this task")
