"""The `deskloop` command line.

Every subcommand explains itself with --help. Errors the lab raises on purpose
(`DeskLoopError`) are printed as one readable block and exit with status 2;
a run whose task did not pass exits 1 (so scripts can tell).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app import __version__
from app.errors import DeskLoopError

DEFAULT_DB = Path("sessions") / "deskloop.db"
DEFAULT_TASKS = Path("tasks")
DEMO_TASKS = ("gimp-flip-export", "gimp-poster-resize", "gimp-badge-interactive")

EPILOG = """\
examples:
  deskloop demo                                  run the GIMP demo tasks, print scores
  deskloop run gimp-flip-export --agent reference
  deskloop run gimp-flip-export --agent null --json
  deskloop tasks validate tasks/                 check every task file
  deskloop episodes list                         what was recorded
  deskloop episodes show 3                       one episode: steps, messages, checks
"""


def _print_err(text: str) -> None:
    print(text, file=sys.stderr)


# -- tasks --------------------------------------------------------------------------


def cmd_tasks_list(args: argparse.Namespace) -> int:
    from app.tasks.loader import load_tasks

    tasks, errors = load_tasks(args.path)
    rows = [
        [t.id, t.app, t.level, "interactive" if t.interactive else "standard", t.title]
        for t in sorted(tasks, key=lambda t: (t.app, t.level, t.id))
    ]
    _table(["id", "app", "level", "kind", "title"], rows)
    for err in errors:
        _print_err(f"invalid task:\n{err}")
    return 2 if errors else 0


def cmd_tasks_show(args: argparse.Namespace) -> int:
    from app.checks.tree import CheckGroup, EvalNode
    from app.tasks.loader import find_task
    from app.tasks.triggers import describe_trigger

    task = find_task(args.task, [args.tasks_dir])
    print(
        f"{task.id}  ({task.app}, {task.level}, "
        f"{'interactive' if task.interactive else 'standard'})"
    )
    print(f"file: {task.source}")
    print(f"title: {task.title}")
    print(f"\ninstruction:\n  {task.instruction.strip()}")
    if task.setup:
        print("\nsetup:")
        for step in task.setup:
            print(f"  - {step.model_dump(by_alias=True, exclude_defaults=True)}")
    if task.phases:
        print("\nphases:")
        for i, phase in enumerate(task.phases, 1):
            print(
                f"  {i}. {describe_trigger(phase.parsed_trigger)}"
                f"{f' [{phase.kind}]' if phase.kind else ''}: {phase.message.strip()}"
            )
    print(f"\nbudget: {task.budget.steps} steps, {task.budget.seconds:g} s")

    def show(node: EvalNode, depth: int) -> None:
        pad = "  " * depth
        req = "" if node.required else " (optional)"
        if isinstance(node, CheckGroup):
            print(f"{pad}{node.op}{req} weight {node.weight:g}:")
            for child in node.children:
                show(child, depth + 1)
        else:
            params = node.params.model_dump(mode="json", exclude_defaults=True)
            print(f"{pad}- {node.spec.name}{req} weight {node.weight:g} {params}")

    print("\nevaluate:")
    show(task.eval_tree, 1)
    print(f"\nreference: {task.reference or 'none'}")
    return 0


def cmd_tasks_validate(args: argparse.Namespace) -> int:
    from app.tasks.loader import load_task, task_files

    paths: list[Path] = []
    for target in args.paths or [args.tasks_dir]:
        paths.extend(task_files(target))
    bad = 0
    for path in paths:
        try:
            load_task(path)
            print(f"ok       {path}")
        except DeskLoopError as exc:
            bad += 1
            print(f"INVALID  {path}")
            for line in str(exc).splitlines():
                print(f"  {line}")
    print(f"\n{len(paths) - bad} valid, {bad} invalid")
    return 1 if bad else 0


# -- running ------------------------------------------------------------------------


def _install_signal_handlers(task: asyncio.Task[Any]) -> None:
    # SIGTERM/SIGINT cancel the episode so it is recorded as aborted and its
    # desktop is closed; SIGKILL is covered by the reaper and store recovery.
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)


async def _run_tasks(args: argparse.Namespace, task_refs: Sequence[str]) -> list[Any]:
    from app.agents.factory import make_agent
    from app.desktops.factory import make_desktop
    from app.runner import EpisodeRunner, RunOptions
    from app.store import Store
    from app.tasks.loader import find_task
    from app.users import SimulatedUser

    tasks = [find_task(ref, [args.tasks_dir]) for ref in task_refs]
    results = []
    with Store(args.db) as store:
        for task in tasks:
            agent = make_agent(args.agent, task)
            desktop = make_desktop(args.backend)
            verbose = not args.json

            def progress(text: str, task_id: str = task.id, verbose: bool = verbose) -> None:
                if verbose:
                    print(f"[{task_id}] {text}", file=sys.stderr, flush=True)

            try:
                runner = EpisodeRunner(
                    task,
                    desktop,
                    agent,
                    SimulatedUser(),
                    store,
                    backend=args.backend,
                    options=RunOptions(),
                    progress=progress,
                )
                results.append(await runner.run())
            finally:
                await desktop.close()
    return results


def _run_async(coro: Any) -> Any:
    async def main() -> Any:
        current = asyncio.current_task()
        assert current is not None
        _install_signal_handlers(current)
        return await coro

    try:
        return asyncio.run(main())
    except asyncio.CancelledError:
        _print_err("interrupted: the episode was recorded as aborted")
        raise SystemExit(130) from None


def cmd_run(args: argparse.Namespace) -> int:
    results = _run_async(_run_tasks(args, [args.task]))
    result = results[0]
    if args.json:
        print(json.dumps(result.as_json()))
    else:
        _print_result(result)
    return 0 if result.passed else 1


def cmd_demo(args: argparse.Namespace) -> int:
    args.agent = "reference"
    args.json = False
    results = _run_async(_run_tasks(args, list(args.tasks or DEMO_TASKS)))
    print()
    _table(
        ["task", "episode", "status", "steps", "passed", "score"],
        [
            [
                r.task_id,
                str(r.episode_id),
                r.status,
                str(r.steps),
                "yes" if r.passed else "no",
                f"{(r.score or 0.0):.2f}",
            ]
            for r in results
        ],
    )
    print(f"\nrecorded in {args.db}; see `deskloop episodes show ID`")
    return 0 if all(r.passed for r in results) else 1


def _print_result(result: Any) -> None:
    print(
        f"\nepisode {result.episode_id} · task {result.task_id} · {result.status}"
        f" ({result.end_reason}) · {result.steps} steps"
    )
    if result.error:
        print(f"error: {result.error}")
    for check in result.checks:
        mark = "PASS" if check["passed"] else "FAIL"
        print(f"  {mark} {check['name']:<18} {check['score']:.2f}  {check['evidence']}")
    if result.score is not None:
        print(f"score: {result.score:.2f}  passed: {'yes' if result.passed else 'no'}")


# -- episodes -----------------------------------------------------------------------


def cmd_episodes_list(args: argparse.Namespace) -> int:
    from app.store import Store

    with Store(args.db) as store:
        episodes = store.list_episodes(
            task_id=args.task, status=args.status, agent=args.agent, limit=args.limit
        )
    rows = [
        [
            str(e.id),
            e.task_id,
            e.agent,
            e.user_mode,
            e.status,
            e.end_reason or "",
            str(e.steps),
            "" if e.passed is None else ("yes" if e.passed else "no"),
            "" if e.score is None else f"{e.score:.2f}",
            e.started_at.strftime("%Y-%m-%d %H:%M:%S"),
        ]
        for e in episodes
    ]
    _table(
        ["id", "task", "agent", "user", "status", "end", "steps", "passed", "score", "started"],
        rows,
    )
    return 0


def cmd_episodes_show(args: argparse.Namespace) -> int:
    from app.store import Store

    with Store(args.db) as store:
        e = store.get_episode(args.id)
        steps = store.steps(args.id)
        messages = store.messages(args.id)
        phases = store.phases(args.id)
        checks = store.checks(args.id)
    print(
        f"episode {e.id} · task {e.task_id} ({e.app} {e.level}) · agent {e.agent} · "
        f"user {e.user_mode} · backend {e.backend}"
    )
    print(
        f"status {e.status} · end {e.end_reason} · steps {e.steps} · "
        f"started {e.started_at} · ended {e.ended_at or '-'}"
    )
    if e.error:
        print(f"error: {e.error}")
    print("\nconversation:")
    for m in messages:
        print(f"  [step {m.step:>3}] {m.role:<5} {m.kind:<12} {m.text.strip()}")
    if phases:
        print("\nphases:")
        for p in phases:
            where = f"at step {p.delivered_step}" if p.delivered_step is not None else ""
            print(f"  {p.idx + 1}. {p.status} {where}  {json.dumps(p.trigger)}")
    print("\nsteps:")
    for s in steps:
        timing = (
            f"agent {s.agent_seconds * 1000:.0f} ms, act {s.act_seconds * 1000:.0f} ms, "
            f"settle {s.settle_seconds * 1000:.0f} ms"
        )
        err = f"  REJECTED: {s.error}" if s.error else ""
        print(f"  {s.idx:>3}  {s.description:<40} {timing}{err}")
    _print_checks(checks, e)
    return 0


def _print_checks(checks: Sequence[Any], e: Any) -> None:
    if checks:
        print("\nchecks:")
        for c in checks:
            mark = "PASS" if c.passed else "FAIL"
            opt = "" if c.required else " (optional)"
            print(
                f"  {mark} {c.path:<16} {c.name}{opt} w={c.weight:g} "
                f"score {c.score:.2f}: {c.evidence}"
            )
    if e.score is not None:
        print(f"\nscore {e.score:.2f} · passed {'yes' if e.passed else 'no'}")
    else:
        print("\nnot scored" + (" (episode ended in error)" if e.status == "error" else ""))


def cmd_score(args: argparse.Namespace) -> int:
    from app.store import Store

    with Store(args.db) as store:
        e = store.get_episode(args.id)
        checks = store.checks(args.id)
    print(f"episode {e.id} · task {e.task_id} · {e.status} ({e.end_reason})")
    print(
        "The local desktop's final state is discarded after scoring; these are the "
        "checks recorded at the end of the episode."
    )
    _print_checks(checks, e)
    return 0 if e.passed else 1


def cmd_desktops_cleanup(args: argparse.Namespace) -> int:
    from app.desktops.local import reap_orphans

    killed = reap_orphans()
    print(
        f"stopped {len(killed)} leftover desktop process(es)"
        if killed
        else "no leftover desktop processes"
    )
    return 0


# -- plumbing -----------------------------------------------------------------------


def _table(headers: list[str], rows: list[list[str]]) -> None:
    if not rows:
        print("(none)")
        return
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="deskloop",
        description="DeskLoop: run and record agents on real GIMP/Blender/Kdenlive desktops.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"deskloop {__version__}")
    parser.add_argument(
        "--db",
        type=Path,
        default=Path(os.environ.get("DESKLOOP_DB", DEFAULT_DB)),
        help="episode database (default: sessions/deskloop.db, or $DESKLOOP_DB)",
    )
    parser.add_argument(
        "--tasks-dir",
        type=Path,
        default=DEFAULT_TASKS,
        help="task library folder for looking up task ids (default: tasks)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def add_run_options(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--backend",
            choices=["local"],
            default="local",
            help="where desktops come from (default: local Xvnc on this host)",
        )
        p.add_argument(
            "--user",
            choices=["simulated"],
            default="simulated",
            help="who plays the user: the task's phase script (simulated)",
        )

    run = sub.add_parser(
        "run",
        help="run one task once and score it",
        description="Run one episode: reset a desktop, run the task's setup, "
        "let the agent act, deliver phases, record and score.",
    )
    run.add_argument("task", help="task id (looked up in --tasks-dir) or path to a task file")
    run.add_argument(
        "--agent",
        default="reference",
        help="reference (the task's own solution) | null (DONE at once) | "
        "scripted:FILE (default: reference)",
    )
    add_run_options(run)
    run.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (episode, task, status, passed, score) last",
    )
    run.set_defaults(func=cmd_run)

    demo = sub.add_parser(
        "demo",
        help="run the demo tasks with their reference solutions",
        description="Run the three GIMP demo tasks with the scripted "
        "reference agent and the simulated user; print a score table.",
    )
    demo.add_argument("tasks", nargs="*", help=f"task ids (default: {', '.join(DEMO_TASKS)})")
    add_run_options(demo)
    demo.set_defaults(func=cmd_demo)

    tasks = sub.add_parser("tasks", help="list, show and validate tasks")
    tsub = tasks.add_subparsers(dest="tasks_command", metavar="ACTION", required=True)
    tl = tsub.add_parser("list", help="list the tasks in a folder")
    tl.add_argument("path", nargs="?", type=Path, default=DEFAULT_TASKS)
    tl.set_defaults(func=cmd_tasks_list)
    ts = tsub.add_parser("show", help="show one task: instruction, phases, setup, checks")
    ts.add_argument("task", help="task id or path")
    ts.set_defaults(func=cmd_tasks_show)
    tv = tsub.add_parser("validate", help="validate task files; exit 1 if any is invalid")
    tv.add_argument("paths", nargs="*", type=Path, help="files or folders (default: tasks)")
    tv.set_defaults(func=cmd_tasks_validate)

    episodes = sub.add_parser("episodes", help="list and show recorded episodes")
    esub = episodes.add_subparsers(dest="episodes_command", metavar="ACTION", required=True)
    el = esub.add_parser("list", help="list episodes, newest first")
    el.add_argument("--task", help="only this task id")
    el.add_argument("--status", choices=["running", "finished", "error"])
    el.add_argument("--agent", help="only this agent")
    el.add_argument("--limit", type=int, default=50)
    el.set_defaults(func=cmd_episodes_list)
    es = esub.add_parser("show", help="one episode: conversation, phases, steps, checks")
    es.add_argument("id", type=int)
    es.set_defaults(func=cmd_episodes_show)

    score = sub.add_parser("score", help="print the stored score and checks of an episode")
    score.add_argument("id", type=int)
    score.set_defaults(func=cmd_score)

    desktops = sub.add_parser("desktops", help="manage desktops")
    dsub = desktops.add_subparsers(dest="desktops_command", metavar="ACTION", required=True)
    dc = dsub.add_parser("cleanup", help="stop desktop processes left by a crashed DeskLoop")
    dc.set_defaults(func=cmd_desktops_cleanup)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        code: int = args.func(args)
        return code
    except DeskLoopError as exc:
        _print_err(f"{exc.title}:\n{exc}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
