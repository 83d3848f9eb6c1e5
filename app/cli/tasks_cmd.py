"""`deskloop tasks list|show|validate|verify|proofs|import|audit`."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

from app.cli import import_cmd
from app.cli.audit_cmd import register_audit
from app.cli.common import indent_block, print_err
from app.core.errors import DeskLoopError
from app.metrics.tables import print_table

DEFAULT_TASKS = Path("tasks")


def cmd_list(args: argparse.Namespace) -> int:
    from app.tasks.loader import load_tasks

    tasks, errors = load_tasks(args.path)
    rows = [
        [t.id, t.app, t.level, "interactive" if t.interactive else "standard", t.title]
        for t in sorted(tasks, key=lambda t: (t.app, t.level, t.id))
    ]
    print_table(["id", "app", "level", "kind", "title"], rows)
    for err in errors:
        print_err(f"invalid task:\n{err}")
    return 2 if errors else 0


def cmd_show(args: argparse.Namespace) -> int:
    from app.checks.tree import CheckGroup, EvalNode
    from app.core.triggers import describe_trigger
    from app.tasks.loader import find_task

    task = find_task(args.task, [args.tasks_dir])
    kind = "interactive" if task.interactive else "standard"
    print(f"{task.id}  ({task.app}, {task.level}, {kind})")
    print(f"file: {task.source}")
    print(f"title: {task.title}")
    print(f"\ninstruction:\n  {indent_block(task.instruction, '  ')}")
    if task.setup:
        print("\nsetup:")
        for step in task.setup:
            print(f"  - {step.model_dump(by_alias=True, exclude_defaults=True)}")

    def show(node: EvalNode, depth: int) -> None:
        pad = "  " * depth
        req = "" if node.required else " (optional)"
        if isinstance(node, CheckGroup):
            print(f"{pad}{node.op}{req} weight {node.weight:g}:")
            for child in node.children:
                show(child, depth + 1)
        else:
            params: dict[str, Any] = node.params.model_dump(mode="json", exclude_defaults=True)
            label = f" — {node.label}" if node.label else ""
            print(f"{pad}- {node.spec.name}{req} weight {node.weight:g} {params}{label}")

    if task.phases:
        print("\nphases:")
        for i, phase in enumerate(task.phases, 1):
            label = f" [{phase.kind}]" if phase.kind else ""
            print(f"  {i}. {describe_trigger(phase.trigger)}{label}:")
            print(f"     {indent_block(phase.message, '     ')}")
            tree = task.phase_tree(i - 1)
            if tree is not None:
                print("     checks at delivery:")
                show(tree, 3)
    print(f"\nbudget: {task.budget.steps} steps, {task.budget.seconds:g} s")

    print("\nevaluate:")
    show(task.eval_tree, 1)
    print(f"\nreference: {task.reference or 'none'}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from app.agents.reference_script import load_script
    from app.core.validation import located
    from app.tasks.loader import (
        duplicate_ids,
        load_task,
        manual_steps,
        resolve_asset,
        task_files,
    )
    from app.tasks.model import Task
    from app.tasks.reach import phase_warnings

    targets = args.paths or [args.tasks_dir]
    found: list[Path] = []
    problems: dict[Path, list[str]] = {}
    for target in targets:
        try:
            found.extend(task_files(target))
        except (DeskLoopError, OSError) as exc:
            # One unreadable target never stops the others from being listed.
            problems[target] = [str(exc) if isinstance(exc, DeskLoopError) else f"{target}: {exc}"]
    paths = list(dict.fromkeys([*found, *problems]))
    if not paths:
        where = ", ".join(str(target) for target in targets)
        print_err(f"no task files in {where} (a task is <app>/<task-id>.yaml)")
        return 1
    warnings: dict[Path, list[str]] = {}
    loaded: list[Task] = []
    for path in found:
        try:
            task = load_task(path)
            if task.reference is not None:
                # The reference must parse as a run would read it: the loader below the
                # agents cannot, so the command does (scripted agents' own validation).
                load_script(resolve_asset(task.folder, task.reference, "reference"))
            loaded.append(task)
            warnings[path] = located(path, phase_warnings(task), task.field_lines).splitlines()
            # Valid as a file, but not yet the task its source meant.
            warnings[path] += [
                f"{path}: a manual step is still to do: {step}" for step in manual_steps(path)
            ]
        except DeskLoopError as exc:
            problems[path] = str(exc).splitlines()
        except Exception as exc:  # one file's bug must not hide the others
            bug = f"internal error ({type(exc).__name__}: {exc}); please report it"
            problems[path] = [f"{path}: {bug}"]
    for task_id, files in duplicate_ids(loaded).items():
        for task in (t for t in loaded if t.id == task_id):
            others = ", ".join(str(other) for other in files if other != task.source)
            problem = f"id: task id {task_id!r} is also claimed by {others}"
            problems[task.source] = [located(task.source, [problem], task.field_lines)]
    for path in paths:
        if path in problems:
            print(f"INVALID  {path}")
            for line in problems[path]:
                print(f"  {line}")
        else:
            print(f"ok       {path}")
            for line in warnings.get(path, []):
                print(f"  warning: {line}")
    bad = len(problems)
    warned = sum(1 for path, lines in warnings.items() if lines and path not in problems)
    note = f" ({warned} with warnings)" if warned else ""
    print(f"\n{len(paths) - bad} valid{note}, {bad} invalid")
    return 1 if bad else 0


def cmd_verify(args: argparse.Namespace) -> int:
    import json
    import sys
    from collections import Counter

    from app.cli.common import open_store, run_async
    from app.proving.verify import MODES, verdict_json, verify_tasks
    from app.tasks.loader import load_task, task_files

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        print_err(f"--modes: unknown {', '.join(unknown) or 'empty list'}; use {','.join(MODES)}")
        return 2
    if args.record and set(modes) != set(MODES):
        print_err(f"--record needs all three runs: --modes {','.join(MODES)}")
        return 2
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
        verdicts = run_async(
            verify_tasks(
                tasks, store, args.backend, modes, None if args.json else progress, args.record
            )
        )
    ok = not invalid and all(v.ok for v in verdicts)
    if args.json:
        print(
            json.dumps({"ok": ok, "invalid": invalid, "tasks": [verdict_json(v) for v in verdicts]})
        )
        return 0 if ok else 1

    def cell(verdict: Any, mode: str) -> str:
        run = next((r for r in verdict.runs if r.mode == mode), None)
        if run is None:
            return "-"
        score = "error" if run.score is None else f"{run.score:.2f}"
        return f"{score} {'ok' if run.ok else 'FAIL'} (#{run.episode_id})"

    print()
    print_table(
        ["task", "app", "level", "kind", "solution", *modes, "verdict"],
        [
            [
                v.task.id,
                v.task.app,
                v.task.level,
                "interactive" if v.task.interactive else "standard",
                v.reference_kind,
                *(cell(v, m) for m in modes),
                "ok" if v.ok else "FAILED",
            ]
            for v in verdicts
        ],
    )
    failures = [(v.task.id, r) for v in verdicts for r in v.runs if not r.ok]
    if failures:
        print("\nfailures:")
        for task_id, run in failures:
            print(f"  {task_id} {run.mode}: {run.reason}")
    counts = Counter(
        (v.task.app, v.task.level, "interactive" if v.task.interactive else "standard")
        for v in verdicts
        if v.ok
    )
    print("\nverified tasks by app, level and kind:")
    print_table(
        ["app", "level", "kind", "verified"],
        [[app, level, kind, str(n)] for (app, level, kind), n in sorted(counts.items())],
    )
    passed = sum(1 for v in verdicts if v.ok)
    print(
        f"\n{passed} of {len(verdicts)} tasks verified ({', '.join(modes)})"
        + (f"; {len(invalid)} invalid task files" if invalid else "")
        + f"; episodes recorded in {args.db}"
    )
    return 0 if ok else 1


def cmd_proofs(args: argparse.Namespace) -> int:
    import json

    from app.tasks.loader import load_task, task_files
    from app.tasks.proofs import APPS, KINDS, LEVELS, cell_counts, read_proof

    statuses = []
    invalid: list[str] = []
    for target in args.paths or [args.tasks_dir]:
        for path in task_files(target):
            try:
                statuses.append(read_proof(load_task(path)))
            except DeskLoopError as exc:
                invalid.append(str(exc))
    counts = cell_counts(statuses)
    proven = sum(1 for s in statuses if s.state == "proven")
    short = [cell for cell, n in counts.items() if n < args.min_per_cell]
    unproven = [s for s in statuses if s.state != "proven"]
    ok = not invalid and not unproven and not short and proven >= args.min_total
    if args.json:
        print(
            json.dumps(
                {
                    "ok": ok,
                    "proven": proven,
                    "tasks": [
                        {"task": s.task.id, "state": s.state, "detail": s.detail} for s in statuses
                    ],
                    "cells": [
                        {"app": a, "level": lv, "kind": k, "proven": n}
                        for (a, lv, k), n in sorted(counts.items())
                    ],
                    "invalid": invalid,
                }
            )
        )
        return 0 if ok else 1
    for problem in invalid:
        print_err(f"invalid task:\n{problem}")
    if args.verbose:
        print_table(
            ["task", "app", "level", "proof", "evaluator"],
            [[s.task.id, s.task.app, s.task.level, s.state, s.evaluator] for s in statuses],
        )
        print()
    print("proven tasks by app, level and kind (standard / interactive):")
    print_table(
        ["app", *LEVELS],
        [
            [
                app,
                *(
                    f"{counts[(app, lv, KINDS[0])]} / {counts[(app, lv, KINDS[1])]}"
                    for lv in LEVELS
                ),
            ]
            for app in APPS
        ],
    )
    for status in unproven:
        print(f"  {status.task.id}: {status.state}: {status.detail}")
    evaluators = Counter(s.evaluator for s in statuses if s.state == "proven")
    print(
        f"\n{proven} of {len(statuses)} tasks proven"
        + (f"; {len(short)} cells under {args.min_per_cell}" if short else "")
        + (f"; the library needs {args.min_total}" if proven < args.min_total else "")
        + (f"; proofs by {len(evaluators)} evaluator versions" if len(evaluators) > 1 else "")
    )
    return 0 if ok else 1


def register(sub: Any) -> None:
    tasks = sub.add_parser("tasks", help="list, show and validate tasks")
    tsub = tasks.add_subparsers(dest="tasks_command", metavar="ACTION", required=True)
    tl = tsub.add_parser("list", help="list the tasks in a folder")
    tl.add_argument("path", nargs="?", type=Path, default=DEFAULT_TASKS)
    tl.set_defaults(func=cmd_list)
    ts = tsub.add_parser("show", help="show one task: instruction, phases, setup, checks")
    ts.add_argument("task", help="task id or path")
    ts.set_defaults(func=cmd_show)
    tv = tsub.add_parser("validate", help="validate task files; exit 1 if any is invalid")
    tv.add_argument("paths", nargs="*", type=Path, help="files or folders (default: tasks)")
    tv.set_defaults(func=cmd_validate)
    tvf = tsub.add_parser(
        "verify",
        help="prove tasks: reference scores 1, null agent and untouched start score 0",
        description="For each task run three recorded episodes on fresh desktops: the "
        "reference solution (must pass with score 1), the null agent (must score 0) and the "
        "untouched start state (must score 0). Exit 1 if any task fails.",
    )
    tvf.add_argument("paths", nargs="*", type=Path, help="files or folders (default: tasks)")
    tvf.add_argument(
        "--backend",
        choices=["local"],
        default="local",
        help="where desktops come from (default: local)",
    )
    tvf.add_argument(
        "--modes",
        default="reference,null,untouched",
        help="which runs to do, comma-separated (default: reference,null,untouched)",
    )
    tvf.add_argument("--json", action="store_true", help="print one JSON object at the end")
    tvf.add_argument(
        "--record",
        action="store_true",
        help="write each proven task's proof to <task folder>/proofs/<id>.json (the ledger "
        "that `tasks proofs` and the test suite read)",
    )
    tvf.set_defaults(func=cmd_verify)
    tp = tsub.add_parser(
        "proofs",
        help="the proof ledger: which tasks are proven, stale or unproven, per app/level/kind",
        description="Read each task's proof (written by `tasks verify --record`) and say "
        "whether it is current: a proof is bound to the task file, its start state (setup "
        "and the assets it loads) and its reference. Exit 1 if a task is not proven, a cell "
        "holds fewer than --min-per-cell proven tasks or the library fewer than --min-total.",
    )
    tp.add_argument("paths", nargs="*", type=Path, help="files or folders (default: tasks)")
    tp.add_argument("--min-per-cell", type=int, default=0, metavar="N")
    tp.add_argument("--min-total", type=int, default=0, metavar="N")
    tp.add_argument("-v", "--verbose", action="store_true", help="one line per task")
    tp.add_argument("--json", action="store_true", help="print one JSON object")
    tp.set_defaults(func=cmd_proofs)
    import_cmd.register(tsub)
    register_audit(tsub)
