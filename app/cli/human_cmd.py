"""`deskloop human TASK`: a person is the agent, through a VNC viewer (baselines)."""

from __future__ import annotations

import argparse
import sys
import threading
from typing import Any

from app.cli.common import open_store, print_err, run_async


async def run_human(args: argparse.Namespace) -> Any:
    import asyncio

    from app.agents.person import COMMANDS_HELP
    from app.agents.spec import PersonSpec
    from app.core.actions import describe_action
    from app.episode.control import RunOptions
    from app.episode.events import MessageEvent, RunnerEvent
    from app.episode.launch import launch
    from app.rfb.proxy import ProxyAddress
    from app.tasks.loader import find_task

    task = find_task(args.task, [args.tasks_dir])
    loop = asyncio.get_running_loop()

    def announce(address: ProxyAddress) -> None:
        print(
            f"\nConnect a VNC viewer to {address.host}:{address.port} "
            f"(password {address.password}).\n"
            f"Type commands here and press Enter: {COMMANDS_HELP}\n",
            flush=True,
        )

    def on_event(event: RunnerEvent) -> None:
        if isinstance(event, MessageEvent) and event.message.role == "user":
            print(f"\n[{event.message.kind}] {event.message.text}\n", flush=True)

    with open_store(args.db) as store:
        # A new desktop of the task's image, driven by the person's viewer through the
        # proxy; the runner's is a pass-through to it, closed when the episode ends.
        episode = launch(
            task,
            store,
            backend=args.backend,
            agent=PersonSpec(port=args.port),
            announce=announce,
            # The person's input already reached the desktop and is on screen: the
            # runner need not wait long for it to settle.
            options=RunOptions(settle_timeout=0.5),
            progress=lambda text: print_err(f"[{task.id}] {text}"),
            on_event=on_event,
        )
        person = episode.person
        assert person is not None  # launch builds a person for a PersonSpec

        def submit(line: str) -> None:
            try:
                action = person.command(line)
            except ValueError as exc:
                print_err(str(exc))
                return
            # describe_action shows a DONE's answer as it was read ("DONE: 2").
            print(f"sent: {describe_action(action)}", flush=True)

        def read_commands() -> None:
            # stdin is read in a thread: a blocking readline must not hold up the loop.
            for line in sys.stdin:
                if line.strip():
                    loop.call_soon_threadsafe(submit, line)

        threading.Thread(target=read_commands, name="human-commands", daemon=True).start()
        return await episode.run()


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
