"""One `deskloop vm` action on a libvirt desktop, run in a child process that reports
over a structured channel: `python -m app.desktops.libvirt ACTION NAME [KEY]`.

`app.desktops.inventory.vm_command` starts it for the TUI (its docstring says why a
child process). The channel is the child's stdout, one JSON object a line, written
and read only through this module:

- `{"event": "progress", "text": ...}`: what the desktop reports as it goes;
- `{"event": "done"}`: the action succeeded (exit status 0);
- `{"event": "failed", "title": ..., "message": ...}`: it raised; `title` is the
  `DeskLoopError` subclass's title (exit status 2) or the name of an unexpected
  exception's class (exit status 1, its traceback on stderr).

SIGINT or SIGTERM cancel the action (exit status 130), as Ctrl-C does `deskloop vm`.
The domain is never stopped on the way out: the lock goes with the process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import traceback
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from app.core.errors import DeskLoopError
from app.desktops.libvirt.config import LibvirtConfig
from app.desktops.libvirt.desktop import LibvirtDesktop

EXIT_OK = 0
EXIT_UNEXPECTED = 1
EXIT_FAILED = 2
EXIT_INTERRUPTED = 130

ACTIONS: dict[str, Callable[[LibvirtDesktop, str], Coroutine[Any, Any, object]]] = {
    "start": lambda desktop, _key: desktop.reset(),
    "stop": lambda desktop, _key: desktop.stop(),
    "snapshot": lambda desktop, key: desktop.save_running(key),
    "revert": lambda desktop, key: desktop.restore_state(key),
    # The TUI's delete (after its confirmation): the domain, its overlay, its start
    # states and its files, as `deskloop vm rm` (LibvirtDesktop.remove, proven on real
    # domains in tests/vm/test_libvirt.py).
    "rm": lambda desktop, _key: desktop.remove(),
    # The TUI's create dialog: define the domain from a built image (no boot), as
    # `deskloop vm create`; its image, memory and vCPUs come as options (`main`).
    "create": lambda desktop, _key: desktop.create(),
}
"""What each action does; snapshot and revert take the state's key. All but `rm`
leave the domain defined."""
NEEDS_KEY = ("snapshot", "revert")

VM_ACTIONS = tuple(ACTIONS)


@dataclass(frozen=True)
class Progress:
    text: str


@dataclass(frozen=True)
class Done:
    pass


@dataclass(frozen=True)
class Failed:
    title: str
    message: str


Report = Progress | Done | Failed


def encode(report: Report) -> str:
    """`report` as one channel line (with its newline)."""
    if isinstance(report, Progress):
        data: dict[str, str] = {"event": "progress", "text": report.text}
    elif isinstance(report, Done):
        data = {"event": "done"}
    else:
        data = {"event": "failed", "title": report.title, "message": report.message}
    return json.dumps(data) + "\n"


def decode(line: bytes | str) -> Report | None:
    """The report on one channel line; None for a line that is not one."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    event = data.get("event")
    if event == "progress":
        return Progress(str(data.get("text", "")))
    if event == "done":
        return Done()
    if event == "failed":
        return Failed(str(data.get("title", "")), str(data.get("message", "")))
    return None


def child_argv(action: str, name: str, *args: str) -> list[str]:
    """The command line of the child that runs `action` on desktop `name` (`args`:
    the state's key for snapshot and revert; `--image X --memory M --vcpus N` for
    create)."""
    return [sys.executable, "-m", "app.desktops.libvirt", action, name, *args]


def _channel() -> TextIO:
    """The report channel: the process's original stdout. Anything else printing to
    stdout (a library, a stray print) is sent to stderr, so it cannot corrupt it."""
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return channel


def _run_cancellable(coro: Coroutine[Any, Any, object]) -> bool:
    """Run `coro`; False when SIGINT or SIGTERM cancelled it."""

    async def main() -> None:
        current = asyncio.current_task()
        assert current is not None
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, current.cancel)
        await coro

    try:
        asyncio.run(main())
    except asyncio.CancelledError:
        return False
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.desktops.libvirt")
    parser.add_argument("action", choices=VM_ACTIONS)
    parser.add_argument("name")
    parser.add_argument("key", nargs="?", help=f"the start state's key ({', '.join(NEEDS_KEY)})")
    parser.add_argument("--image", help="create: the built image to define it from")
    parser.add_argument("--memory", type=int, help="create: MiB of guest memory")
    parser.add_argument("--vcpus", type=int, help="create: virtual CPUs")
    args = parser.parse_args(argv)
    if args.action == "create" and not args.image:
        parser.error("create needs --image")
    if args.action in NEEDS_KEY and not args.key:
        parser.error(f"{args.action} needs the start state's KEY")
    channel = _channel()

    def report(item: Report) -> None:
        channel.write(encode(item))

    try:
        config = LibvirtConfig()
        if args.memory:
            config.memory_mib = args.memory
        if args.vcpus:
            config.vcpus = args.vcpus
        desktop = LibvirtDesktop(
            name=args.name,
            image=args.image,
            config=config,
            progress=lambda text: report(Progress(text)),
        )
        if not _run_cancellable(ACTIONS[args.action](desktop, args.key or "")):
            return EXIT_INTERRUPTED
    except DeskLoopError as exc:
        report(Failed(exc.title, exc.message))
        return EXIT_FAILED
    except Exception as exc:
        traceback.print_exc()
        report(Failed(type(exc).__name__, f"{type(exc).__name__}: {exc}"))
        return EXIT_UNEXPECTED
    report(Done())
    return EXIT_OK
