"""`deskloop human TASK`: a person is the agent, through a VNC viewer (baselines)."""

from __future__ import annotations

import argparse
import sys
import threading
from typing import Any

from app.cli.common import open_store, print_err, run_async


async def run_human(args: argparse.Namespace) -> Any:
    import asyncio

    from app.agents.person import COMMANDS_HELP, PassThroughDesktop, PersonAgent
    from app.core.actions import describe_action
    from app.episode.control import RunOptions
    from app.episode.events import MessageEvent, RunnerEvent
    from app.episode.launch import launch, task_desktop
    from app.rfb.proxy import ProxyAddress
    from app.tasks.loader import find_task

    task = find_task(args.task, [args.tasks_dir])
    loop = asyncio.get_running_loop()
    # The person's viewer drives this desktop (of the task's image) through the
    # proxy, so the agent is built on it before the episode is launched.
    desktop = task_desktop(args.backend, task)

    def announce(address: ProxyAddress) -> None:
        print(
            f"\nConnect a VNC viewer to {address.host}:{address.port} "
            f"(password {address.password}).\n"
            f"Type commands here and press Enter: {COMMANDS_HELP}\n",
            flush=True,
        )

    agent = PersonAgent(desktop, port=args.port, announce=announce)

    def on_event(event: RunnerEvent) -> None:
        if isinstance(event, MessageEvent) and event.message.role == "user":
            print(f"\n[{event.message.kind}] {event.message.text}\n", flush=True)

    def read_commands() -> None:
        # stdin is read in a thread: a blocking readline must not hold up the loop.
        for line in sys.stdin:
            if line.strip():
                loop.call_soon_threadsafe(submit, line)

    def submit(line: str) -> None:
        try:
            action = agent.command(line)
        except ValueError as exc:
            print_err(str(exc))
            return
        # describe_action shows a DONE's answer as it was read ("DONE: 2").
        print(f"sent: {describe_action(action)}", flush=True)

    threading.Thread(target=read_commands, name="human-commands", daemon=True).start()
    with open_store(args.db) as store:
        episode = launch(
            task,
            store,
            backend=args.backend,
            agent=agent,
            # The person's input already reached the desktop and is on screen: the
            # runner acts on a pass-through and need not wait long for it to settle.
            desktop=PassThroughDesktop(desktop),
            options=RunOptions(settle_timeout=0.5),
            progress=lambda text: print_err(f"[{task.id}] {text}"),
            on_event=on_event,
        )
        try:
            return await episode.run()
        finally:
            await desktop.close()


def cmd_human(args: argparse.Namespace) -> int:
    from app.cli.run_cmd import print_result

    result = run_async(run_human(args))
    print_result(result)
    return 0 if result.passed else 1


def register(sub: Any) -> None:
    from app.desktops.factory import BACKENDS

    human = sub.add_parser(
        "human",
        help="a person does the task through a VNC viewer (recorded as an episode)",
        description="Start the task's desktop and a recording VNC proxy on 127.0.0.1 with "
        "its own password. Drive the desktop from any VNC viewer; your clicks, drags, "
        "scrolls, keys and text are recorded as steps. Type done (done ANSWER for a task "
        "that asks for a value), ask QUESTION or fail REASON here. The episode is scored "
        "and stored like any other (agent 'person').",
    )
    human.add_argument("task", help="task id or task file")
    human.add_argument("--port", type=int, default=0, help="proxy port (default: any free)")
    human.add_argument("--backend", choices=list(BACKENDS), default="local")
    human.set_defaults(func=cmd_human)
