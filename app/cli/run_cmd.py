"""`deskloop run` and `deskloop demo`: run episodes on a desktop and score them."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from app.cli.agent_options import (
    add_judge_options,
    add_openai_options,
    judge_config,
    openai_config,
)
from app.cli.common import INTERRUPT, open_store, run_async
from app.core.errors import DeskLoopError, describe_error
from app.metrics.tables import print_table

if TYPE_CHECKING:
    # Imported where episodes run: the command line starts without the runner.
    from app.agents.adapters import ModelConfig
    from app.agents.spec import AgentSpec
    from app.episode.events import EpisodeResult
    from app.episode.judge import JudgeConfig
    from app.episode.launch import Episode
    from app.store import Store
    from app.tasks.model import Task
    from app.users.person import PersonUser

DEMO_TASKS = ("gimp-flip-export", "gimp-poster-resize", "gimp-badge-interactive")


def add_desktop_options(parser: argparse.ArgumentParser, *, person: bool = False) -> None:
    parser.add_argument(
        "--backend",
        choices=["local", "libvirt"],
        default="local",
        help="where desktops come from (default: local, an Xvnc on this host; "
        "libvirt: a VM of the task app's image, or $DESKLOOP_IMAGE; see docs/backends.md)",
    )
    if not person:
        parser.add_argument(
            "--user",
            choices=["simulated"],
            default="simulated",
            help="who plays the user: the task's phase script (simulated)",
        )
        return
    parser.add_argument(
        "--user",
        choices=["simulated", "person"],
        default="simulated",
        help="who plays the user: the task's phase script (simulated), or a person in the "
        "browser (person, with --view browser)",
    )
    parser.add_argument(
        "--view",
        choices=["browser"],
        help="where the person works: browser (the participant view on 127.0.0.1, its "
        "address printed and opened: the live desktop and the conversation)",
    )


async def run_tasks(
    args: argparse.Namespace,
    task_refs: Sequence[str],
    store: Store,
    launched: list[Episode] | None = None,
    on_result: Callable[[EpisodeResult], None] | None = None,
) -> list[EpisodeResult]:
    """Run each task once, one after the other, each on a desktop brought to its start
    state while the task before ran (`app.episode.ahead`); progress lines go to stderr.
    Each episode is appended to `launched` once it is wired up, so a caller can say
    which episode a failure left; `on_result` hears each result as its episode ends."""
    from app.agents.spec import PersonSpec, parse_agent_spec
    from app.core.errors import AgentError
    from app.episode.control import EpisodeControl, RunOptions
    from app.episode.launch import launch
    from app.tasks.loader import find_task

    agent = parse_agent_spec(args.agent)
    if isinstance(agent, PersonSpec):
        raise AgentError("person: a person's episode is deskloop human's (or the TUI's)")
    tasks = [find_task(ref, [args.tasks_dir]) for ref in task_refs]
    # `demo` has no model options: it always replays reference solutions.
    model = openai_config(args, [args.agent]) if hasattr(args, "base_url") else None
    judge = judge_config(args)
    if args.user == "person":
        shown = await _run_in_browser(args, tasks, store, launched, agent, model, judge)
        if on_result is not None:
            for result in shown:
                on_result(result)
        return shown
    from app.episode.ahead import DesktopsByKind, StartAhead

    # Task N+1's desktop is brought to its start state while task N runs, on the
    # kind's other desktop: no task after the first waits for a reset.
    desktops = DesktopsByKind(args.backend)
    ahead = StartAhead(desktops, what="task", say=_say("ahead"))
    results = []
    try:
        for number, task in enumerate(tasks):
            progress = _say(task.id)
            upcoming = tasks[number + 1] if number + 1 < len(tasks) else None
            desktop, prepared = await ahead.start(task, upcoming)
            control = EpisodeControl()
            # The desktop stays the run's (launch leaves a desktop passed in to its
            # owner): it goes back to `desktops` when the episode ends.
            episode = launch(
                task,
                store,
                backend=args.backend,
                agent=agent,
                user=args.user,
                desktop=desktop,
                prepared=prepared,
                openai=model,
                options=RunOptions(judge=judge),
                progress=progress,
                control=control,
            )
            if launched is not None:
                launched.append(episode)
            INTERRUPT.hooks.append(control.abort)
            try:
                results.append(await episode.run())
                if on_result is not None:
                    on_result(results[-1])
            finally:
                INTERRUPT.hooks.remove(control.abort)
                desktops.give_back(desktop)
    finally:
        await ahead.close()
        await desktops.close()
    return results


def _say(prefix: str) -> Callable[[str], None]:
    """Progress lines to stderr, each `[prefix] text`."""
    return lambda text: print(f"[{prefix}] {text}", file=sys.stderr, flush=True)


async def _run_in_browser(
    args: argparse.Namespace,
    tasks: Sequence[Task],
    store: Store,
    launched: list[Episode] | None,
    agent: AgentSpec,
    model: ModelConfig | None,
    judge: JudgeConfig | None,
) -> list[EpisodeResult]:
    """`--user person --view browser`: each episode with a person as its user, who
    works in the participant view (app.seat)."""
    from app.core.opener import open_in_browser
    from app.core.settings import read_settings
    from app.episode.control import EpisodeControl, RunOptions
    from app.episode.launch import launch
    from app.seat.participant import novnc_problem, run_in_view

    if args.view != "browser":
        raise DeskLoopError(
            "--user person: the person works in the browser; add --view browser "
            "(or run the episode from the TUI)"
        )
    missing = novnc_problem(read_settings().novnc_dir)
    if missing is not None:
        raise DeskLoopError(f"the browser view cannot show a desktop: {missing}")
    controls: list[EpisodeControl] = []

    def launch_episode(task: Task, user: PersonUser) -> Episode:
        control = EpisodeControl()
        controls.append(control)
        INTERRUPT.hooks.append(control.abort)
        episode = launch(
            task,
            store,
            backend=args.backend,
            agent=agent,
            user=user,
            openai=model,
            options=RunOptions(judge=judge),
            progress=lambda text: print(f"[{task.id}] {text}", file=sys.stderr, flush=True),
            control=control,
        )
        if launched is not None:
            launched.append(episode)
        return episode

    def announce(url: str) -> None:
        print(f"the person's view: {url}", file=sys.stderr, flush=True)
        if open_in_browser(url):
            print("(opened in the browser)", file=sys.stderr, flush=True)

    try:
        return await run_in_view(tasks, launch_episode, announce=announce)
    finally:
        for control in controls:
            INTERRUPT.hooks.remove(control.abort)


def unfinished_json(
    store: Store, task_ref: str, launched: Sequence[Episode], error: str | None
) -> dict[str, Any]:
    """The `--json` object of a run that ended without an episode result (an error, a
    stop): what the database holds of its episode, if one was started, and `error`
    (else the error the episode recorded; None: the run was stopped by a signal)."""
    runner = launched[-1].runner if launched else None
    episode_id = runner.episode_id if runner is not None else None
    payload: dict[str, Any] = {
        "episode": episode_id,
        "task": runner.task.id if runner is not None else task_ref,
        "status": "error",
        "end_reason": None,
        "passed": None,
        "score": None,
        "steps": 0,
        "error": error or "interrupted",
    }
    if episode_id is not None:
        try:
            record = store.get_episode(episode_id)
        except DeskLoopError:
            return payload
        # 'running' when its end could not be written: the next open of the database
        # marks it interrupted.
        payload.update(status=record.status, end_reason=record.end_reason, steps=record.steps)
        payload.update(passed=record.passed, score=record.score)
        if record.status == "running":
            error = (f"{error}; " if error else "") + (
                "the episode's end was not recorded: it is marked interrupted when the "
                "database is next opened"
            )
        payload.update(error=error or record.error or "interrupted")
    return payload


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
    launched: list[Episode] = []

    def shown(result: EpisodeResult) -> None:
        # As each episode ends: a run stopped later still printed the ones before.
        if args.json:
            print(json.dumps(result.as_json()), flush=True)
        else:
            print_result(result)

    with open_store(args.db) as store:
        try:
            results = run_async(
                run_tasks(args, [args.task] * args.repeat, store, launched, on_result=shown)
            )
        except (DeskLoopError, SystemExit) as exc:
            if args.json:
                # The line is printed however the run ended: a stop (130) says why
                # through the error it ended on, if any.
                cause = exc.__cause__ if isinstance(exc, SystemExit) else exc
                error = describe_error(cause) if cause is not None else None
                print(json.dumps(unfinished_json(store, args.task, launched, error)), flush=True)
            raise
    if len(results) > 1 and not args.json:
        passed = sum(bool(r.passed) for r in results)
        print(f"\npassed {passed} of {len(results)} episodes of {results[0].task_id}")
    return 0 if all(r.passed for r in results) else 1


def cmd_demo(args: argparse.Namespace) -> int:
    args.agent = "reference"
    with open_store(args.db) as store:
        results = run_async(run_tasks(args, list(args.tasks or DEMO_TASKS), store))
    print()
    print_table(
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


def _positive(text: str) -> int:
    """argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is less than 1")
    return value


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
        "replay:EPISODE (a recorded episode of this task, played back) | "
        "openai[:MODEL] (a model endpoint with DeskLoop's tools, see --base-url) | "
        "ADAPTER:MODEL (a model in its family's own format: pyautogui, uitars, anthropic, "
        "openai-cua, qwen; see --adapter) (default: reference)",
    )
    add_openai_options(run)
    add_judge_options(run)
    add_desktop_options(run, person=True)
    run.add_argument(
        "--repeat",
        type=_positive,
        default=1,
        metavar="N",
        help="run the task N times, one episode after the other, each next desktop brought "
        "to the start state while the episode before runs (default: 1); exit status 0 only "
        "when every episode passed",
    )
    run.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (episode, task, status, passed, score) per episode, "
        "each on its own line, last",
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
