"""Author a task by demonstration with a scripted person: record, draft, verify.

    .venv/bin/python scripts/demonstrate.py scripts/demonstrations/ID.yaml [--no-verify]
        [--force] [--recording sessions/recordings/ID-...]

A demonstration plan says what the person does in the VNC viewer and how the task is
drafted. It drives the real `deskloop author record` (through its recording proxy, as
a VNC viewer would), then `author draft` and `author verify`. The plans of the
library's demonstrated tasks are kept beside this script, so each task can be
recorded again from scratch.

```yaml
id: gimp-example-l3
app: gimp
assets: [tasks/gimp/assets/photo.png]   # or  from: TASK
person:                                  # what the person does, in order
  - title: '^\\[photo\\].*GIMP$'           # wait until the focused window's title matches
  - settle: 1.0                          # until the screen is still this long
  - key: alt+i                           # any action in the reference-script form
  - type: photo-flipped.png
  - mark: Now export it as a PNG.        # a boundary, with the next phase's message
  - pause: 0.5                          # until the recording has taken in no input
                                         # for this long (its times split actions)
draft:                                   # `author draft` options
  title: ...
  instruction: ...
  proposals: all                         # the checks proposed from the state diff: all | none
  review: [a, d, e, '{check: ...}', A]   # or answer `--proposals ask` one prompt at a time:
                                         # accept, drop, edit (then the check), accept the
                                         # rest; the task's proposals, then each phase's
  messages: {1: ...}                     # phase N's message (default: the mark's note)
  checks: [{check: file_exists, path: ~/Desktop/photo-flipped.png}]   # more, by hand
```

After each action the person waits until the screen has been still for 0.3 s (a
person sees the effect before the next press). The recording ends with the end chord
(Ctrl+Alt+Shift+Q) after the last step.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from app.authoring.recorder import append_control  # noqa: E402
from app.authoring.recording import (  # noqa: E402
    KeyEvent,
    PointerEvent,
    WindowEvent,
    read_recording,
)
from app.core.actions import GuiAction, parse_action  # noqa: E402
from app.core.validation import read_yaml  # noqa: E402
from app.rfb.client import VNCClient, connect  # noqa: E402

END_CHORD = [0xFFE3, 0xFFE9, 0xFFE1, ord("q")]
TITLE_TIMEOUT = 180.0


def deskloop(*args: str, answers: str | None = None) -> subprocess.CompletedProcess[str]:
    print("$ deskloop " + " ".join(args), file=sys.stderr, flush=True)
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        cwd=REPO,
        text=True,
        input=answers,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
    )


async def wait_title(folder: Path, pattern: str) -> None:
    deadline = time.monotonic() + TITLE_TIMEOUT
    while True:
        titles = [e.title for e in read_recording(folder).events if isinstance(e, WindowEvent)]
        if titles and re.search(pattern, titles[-1]):
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"no window {pattern!r} in {TITLE_TIMEOUT:g} s; last: {titles[-3:]}")
        await asyncio.sleep(0.2)


async def input_quiet(folder: Path, seconds: float) -> None:
    """Wait until the recording has taken in no input for `seconds`. The proxy records
    each press only after asking for the focused window (slow on a loaded machine), so
    a person's pause measured by the clock can vanish from the recording; the compiler
    splits actions by the recording's own times."""
    count, since = -1, time.monotonic()
    deadline = since + TITLE_TIMEOUT
    while time.monotonic() < deadline:
        events = read_recording(folder).events
        now = sum(1 for e in events if isinstance(e, KeyEvent | PointerEvent))
        if now != count:
            count, since = now, time.monotonic()
        elif time.monotonic() - since >= seconds:
            return
        await asyncio.sleep(0.1)
    raise SystemExit(f"the recording kept taking in input for {TITLE_TIMEOUT:g} s")


async def play(folder: Path, person: VNCClient, steps: list[Any]) -> None:
    for n, step in enumerate(steps):
        where = f"person[{n}]"
        if isinstance(step, dict) and len(step) == 1:
            ((kind, value),) = step.items()
            if kind == "title":
                await wait_title(folder, str(value))
                continue
            if kind == "settle":
                await person.settle(timeout=30, quiet=float(value))
                continue
            if kind == "pause":
                await input_quiet(folder, float(value))
                continue
            if kind == "mark":
                before = len(read_recording(folder).marks)
                append_control(folder, {"mark": str(value)})
                while len(read_recording(folder).marks) == before:
                    await asyncio.sleep(0.1)
                continue
        action = parse_action(step, where)
        if not isinstance(action, GuiAction):
            raise SystemExit(f"{where}: {step!r} is not something a person does in a viewer")
        await person.perform(action)
        await person.settle(timeout=10, quiet=0.3)
    await person.key_combo(END_CHORD)


async def record(plan: dict[str, Any], folder: Path) -> None:
    args = ["author", "record", "--id", plan["id"], "--out", str(folder)]
    if "from" in plan:
        args += ["--from", plan["from"]]
    else:
        args += ["--app", plan["app"], "--assets", *[str(REPO / a) for a in plan["assets"]]]
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "app.cli",
        *args,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    found = None
    while found is None:
        line = (await proc.stdout.readline()).decode()
        if not line:
            raise SystemExit("author record ended before it printed its address")
        found = re.search(r"viewer to ([\d.]+):(\d+) \(password (\S+)\)", line)
    person = await connect(found[1], int(found[2]), found[3])
    try:
        await play(folder, person, plan["person"])
        # Stay connected until the recorder has ended, as a person's viewer does: when
        # the viewer hangs up, the proxy drops what it has not yet forwarded, and the
        # end chord's last keys wait behind the focused-window query of its first
        # (seconds on a loaded machine), so hanging up at once could lose the end.
        out, _ = await proc.communicate()
    finally:
        await person.close()
    if proc.returncode != 0:
        raise SystemExit(f"author record exited {proc.returncode}")
    print(out.decode().strip(), file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("plan", type=Path)
    parser.add_argument("--tasks-dir", type=Path, default=REPO / "tasks")
    parser.add_argument("--recordings", type=Path, default=REPO / "sessions" / "recordings")
    parser.add_argument("--db", type=Path, default=REPO / "sessions" / "authoring.db")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-verify", action="store_true")
    parser.add_argument("--force", action="store_true", help="replace the task if it exists")
    parser.add_argument(
        "--recording",
        type=Path,
        help="draft (and verify) from this earlier recording of the plan instead of "
        "recording again (a changed draft: section, or a fixed compiler)",
    )
    args = parser.parse_args(argv)
    plan, _ = read_yaml(args.plan, "demonstration plan")
    if args.recording is not None:
        folder = args.recording
    else:
        folder = args.recordings / f"{plan['id']}-{time.strftime('%Y%m%d-%H%M%S')}"
        asyncio.run(record(plan, folder))
    draft = plan["draft"]
    options = [
        "--tasks-dir",
        str(args.tasks_dir),
        "author",
        "draft",
        str(folder),
        "--id",
        plan["id"],
        "--instruction",
        draft["instruction"],
        "--title",
        draft.get("title", plan["id"]),
    ]
    review = draft.get("review")
    if review is not None:
        # The researcher's answers at the terminal, one a line, to the prompts of
        # `--proposals ask`: the task's proposals first, then each phase's.
        options += ["--proposals", "ask"]
    else:
        options += ["--proposals", draft.get("proposals", "all")]
    for number, message in (draft.get("messages") or {}).items():
        options += ["--message", f"{number}={message}"]
    for check in draft.get("checks", []):
        options += ["--check", json.dumps(check)]
    if args.force:
        options.append("--force")
    answers = None if review is None else "".join(f"{line}\n" for line in review)
    drafted = deskloop(*options, answers=answers)
    print(drafted.stdout + drafted.stderr, file=sys.stderr)
    if drafted.returncode != 0 or args.no_verify:
        return drafted.returncode
    verified = deskloop(
        "--tasks-dir",
        str(args.tasks_dir),
        "--db",
        str(args.db),
        "author",
        "verify",
        plan["id"],
        "--repeats",
        str(args.repeats),
    )
    print(verified.stdout + verified.stderr)
    return verified.returncode


if __name__ == "__main__":
    sys.exit(main())
