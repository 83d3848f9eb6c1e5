"""`deskloop tasks audit`: the library's health in one table."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from app.cli.common import open_store, print_err, run_async
from app.core.errors import DeskLoopError
from app.metrics.tables import print_table


def cmd_audit(args: argparse.Namespace) -> int:
    from app.proving.audit import audit_json, audit_table, audit_tasks
    from app.tasks.loader import load_task, task_files

    tasks = []
    invalid: list[str] = []
    for target in args.paths or [args.tasks_dir]:
        for path in task_files(target):
            try:
                tasks.append(load_task(path))
            except DeskLoopError as exc:
                invalid.append(str(exc))
    for problem in invalid:
        print_err(f"invalid task:\n{problem}")

    def progress(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    with open_store(args.db) as store:
        audits = run_async(
            audit_tasks(tasks, store, args.backend, args.repeats, None if args.json else progress)
        )
    ok = not invalid and all(a.ok for a in audits)
    if args.json:
        print(json.dumps({"ok": ok, "invalid": invalid, "tasks": [audit_json(a) for a in audits]}))
        return 0 if ok else 1
    print()
    print_table(*audit_table(audits))
    failures = [(a.task.id, c) for a in audits for c in a.checks if not c.ok]
    if failures:
        print("\nfailures:")
        for task_id, c in failures:
            print(f"  {task_id} {c.name}: {c.reason}")
    passed = sum(a.ok for a in audits)
    print(f"\n{passed} of {len(audits)} tasks pass the audit; episodes in {args.db}")
    return 0 if ok else 1


def register_audit(tsub: Any) -> None:
    audit = tsub.add_parser(
        "audit",
        help="the library's health: reference ×3 = 1, null and untouched = 0, the cheater "
        "flagged, an archive re-scored twice the same",
        description="For each task, on fresh desktops: the reference solution N times "
        "(each must pass with score 1, unflagged), the null agent and the untouched start "
        "(score 0), the task's cheater where it has one (references/cheaters/<id>.yaml: "
        "must be flagged), and the first reference episode's archive re-scored twice (same "
        "score and evidence as the original). Exit 1 if any task fails.",
    )
    audit.add_argument("paths", nargs="*", type=Path, help="files or folders (default: tasks)")
    audit.add_argument("--backend", choices=["local"], default="local")
    audit.add_argument("--repeats", type=int, default=3, help="reference runs per task")
    audit.add_argument("--json", action="store_true", help="print one JSON object at the end")
    audit.set_defaults(func=cmd_audit)
