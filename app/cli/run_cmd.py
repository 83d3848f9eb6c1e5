"""`deskloop run` and `deskloop demo`: run episodes on a desktop and score them."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from app.cli.agent_options import add_openai_options, openai_config
from app.cli.common import INTERRUPT, run_async, table

if TYPE_CHECKING:
    # Imported where episodes run: the command line starts without the runner.
    from app.episode.events import EpisodeResult

DEMO_TASKS = ("gimp-flip-export", "gimp-poster-resize", "gimp-badge-interactive")


def add_desktop_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backend",
        choices=["local", "libvirt"],
        default="local",
        help="where desktops come from (default: local, an Xvnc on this host; "
        "libvirt: a VM of the task app's image, or $DESKLOOP_IMAGE; see docs/backends.md)",
    )
    parser.add_argument(
        "--user",
        choices=["simulated"],
        default="simulated",
        help="who plays the user: the task's phase script (simulated)",
    )


async def run_tasks(args: argparse.Namespace, task_refs: Sequence[str]) -> list[EpisodeResult]:
    """Run each task once, one after the other, each on a fresh desktop."""
    from app.episode.control import EpisodeControl
    from app.episode.launch import launch
    from app.store import Store
    from app.tasks.loader import find_task

    tasks = [find_task(ref, [args.tasks_dir]) for ref in task_refs]
    # `demo` has no model options: it always replays reference solutions.
    model = openai_config(args, [args.agent]) if hasattr(args, "base_url") else None
    verbose = not args.json
    results = []
    with Store(args.db) as store:
        for task in tasks:

            def progress(text: str, task_id: str = task.id) -> None:
                if verbose:
                    print(f"[{task_id}] {text}", file=sys.stderr, flush=True)

            control = EpisodeControl()
            # A fresh desktop of the task's image, closed when the episode ends.
            episode = launch(
                task,
                store,
                backend=args.backend,
                agent=args.agent,
                user=args.user,
                openai=model,
                progress=progress,
                control=control,
            )
            INTERRUPT.hooks.append(control.abort)
            try:
                results.append(await episode.run())
            finally:
                INTERRUPT.hooks.remove(control.abort)
    return results


def print_result(result: EpisodeResult) -> None:
    print(
        f"\nepisode {result.episode_id} · task {result.task_id} · {result.status}"
        f" ({result.end_reason}) · {result.steps} steps"
    )
    if result.error:
        print(f"error: {result.error}")
    for check in result.checks:
        mark = "PASS" if check.passed else "FAIL"
        print(f"  {mark} {check.name:<18} {check.score:.2f}  {check.evidence}")
    if result.score is not None:
        print(f"score: {result.score:.2f}  passed: {'yes' if result.passed else 'no'}")


def cmd_run(args: argparse.Namespace) -> int:
    (result,) = run_async(run_tasks(args, [args.task]))
    if args.json:
        print(json.dumps(result.as_json()))
    else:
        print_result(result)
    return 0 if result.passed else 1


def cmd_demo(args: argparse.Namespace) -> int:
    args.agent = "reference"
    args.json = False
    results = run_async(run_tasks(args, list(args.tasks or DEMO_TASKS)))
    print()
    table(
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


def register(sub: Any) -> None:
    run = sub.add_parser(
        "run",
        help="run one task once and score it",
        description="Run one episode: reset a desktop, run the task's setup, let the agent "
        "act, deliver phases, record and score.",
    )
    run.add_argument("task", help="task id (looked up in --tasks-dir) or path to a task file")
    run.add_argument(
        "--agent",
        default="reference",
        help="reference (the task's own solution) | null (DONE at once) | scripted:FILE | "
        "openai[:MODEL] (an OpenAI-compatible endpoint, see --base-url) (default: reference)",
    )
    add_openai_options(run)
    add_desktop_options(run)
    run.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (episode, task, status, passed, score) last",
    )
    run.set_defaults(func=cmd_run)

    demo = sub.add_parser(
        "demo",
        help="run the demo tasks with their reference solutions",
        description="Run the three GIMP demo tasks with the scripted reference agent and the "
        "simulated user; print a score table.",
    )
    demo.add_argument("tasks", nargs="*", help=f"task ids (default: {', '.join(DEMO_TASKS)})")
    add_desktop_options(demo)
    demo.set_defaults(func=cmd_demo)
