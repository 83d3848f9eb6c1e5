"""`deskloop author record|mark|compile|draft|verify`: tasks by demonstration."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.cli.common import indent_block, print_err, run_async
from app.core.errors import DeskLoopError

if TYPE_CHECKING:
    from app.authoring.review import CheckItem

DEFAULT_RECORDINGS = Path("sessions") / "recordings"


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# ------------------------------------------------------------------ record


async def _record(args: argparse.Namespace) -> Path:
    import asyncio

    from app.authoring.recorder import CHORD_HELP, start_demonstration
    from app.authoring.start_state import write_start_state
    from app.episode.launch import task_desktop
    from app.tasks.loader import find_task

    from_task = find_task(args.from_task, [args.tasks_dir]) if args.from_task else None
    task_id = args.id or (f"{from_task.id}-demo" if from_task else None)
    if task_id is None:
        raise _usage("--id is needed unless --from names a task")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    folder = args.out or DEFAULT_RECORDINGS / f"{task_id}-{stamp}"
    if folder.exists() and any(folder.iterdir()):
        raise _usage(f"--out: {folder} already holds files; pick a new folder")
    start = write_start_state(
        folder, task_id=task_id, app=args.app, assets=args.assets, from_task=from_task
    )
    desktop = task_desktop(args.backend, start.task, width=args.width, height=args.height)
    try:
        _progress(f"starting a {args.backend} desktop for {start.task.app}...")
        recorder, address = await start_demonstration(
            desktop,
            start,
            folder,
            from_task=from_task.id if from_task else None,
            port=args.port,
            progress=_progress,
        )
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, recorder.end, "interrupted (Ctrl-C)")
        print(
            f"\nRecording to {folder}\n"
            f"Connect a VNC viewer to {address.host}:{address.port} (password "
            f"{address.password}) and do the work.\n"
            f"In the viewer: {CHORD_HELP}.\n"
            f"From another terminal: deskloop author mark {folder} --note 'next: ...'\n"
            "Ctrl-C here ends the recording too.\n",
            flush=True,
        )
        try:
            reason = await recorder.wait()
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
            await recorder.stop()
        for problem in recorder.problems:
            print_err(f"warning: {problem}")
        _progress(f"recording ended: {reason}")
    finally:
        await desktop.close()
    return folder


def cmd_record(args: argparse.Namespace) -> int:
    from app.authoring.recording import read_recording
    from app.authoring.start_state import read_start_state

    folder = run_async(_record(args))
    recording = read_recording(folder)
    task_id = read_start_state(folder).task.id  # what --id (or --from) named
    unnoted = [n for n, mark in enumerate(recording.marks, 1) if not mark.note.strip()]
    messages = "".join(f" --message {n}='...'" for n in unnoted)
    print(
        f"Recorded {len(recording.events)} events and {len(recording.marks)} boundaries "
        f"to {folder}.\nNext: deskloop author draft {folder} --id {task_id} "
        f"--instruction '...'{messages}"
    )
    return 0


# ------------------------------------------------------------------ mark


def cmd_mark(args: argparse.Namespace) -> int:
    from app.authoring.recorder import append_control

    if args.end:
        append_control(args.folder, {"end": args.note or "ended from the command line"})
        print(f"asked the recorder of {args.folder} to end")
    else:
        append_control(args.folder, {"mark": args.note or ""})
        print(f"marked a boundary in {args.folder}" + (f": {args.note}" if args.note else ""))
    return 0


# ------------------------------------------------------------------ compile


def cmd_compile(args: argparse.Namespace) -> int:
    from app.authoring.review import load_review

    review = load_review(args.folder)
    recording, compiled, changed = review.recording, review.compiled, review.changed
    if args.json:
        print(
            json.dumps(
                {
                    "actions": len(compiled.actions),
                    "boundaries": [b.note for b in compiled.boundaries],
                    "anchors": len(compiled.anchors),
                    "steps": compiled.steps,
                    "truncated": recording.truncated,
                    "ended": recording.ended,
                    "changed": changed,
                }
            )
        )
        return 0
    state = "ended normally" if recording.ended else "cut off (a crash or a kill)"
    print(f"{args.folder}: {len(recording.events)} events, {state}")
    if recording.truncated:
        print("  the last, half-written line was dropped")
    for n, (actions, note) in enumerate(review.subgoals(), 1):
        print(f"sub-goal {n}:")
        for line in actions:
            print(f"  {line}")
        if n <= len(changed):
            for line in changed[n - 1].splitlines()[1:] or ["nothing changed in the home"]:
                print(f"  Δ {line.strip()}")
        if n <= len(compiled.boundaries):
            print(f"  — boundary: {note or '(no note)'}")
    print(f"{len(compiled.steps)} reference steps, {len(compiled.anchors)} anchors")
    return 0


# ------------------------------------------------------------------ draft


def _review(items: list[CheckItem], mode: str) -> None:
    """Accept, edit or drop each proposed check: all, none, or each asked (accept, edit
    as YAML, drop; 'A' accepts the rest)."""
    from app.authoring.review import parse_check

    rest = mode == "all"
    for n, item in enumerate(items, 1):
        if mode == "none":
            item.state = "dropped"
            continue
        if rest:
            item.state = "accepted"
            continue
        print(f"\ncheck {n}/{len(items)}: {item.why}\n  {item.text}")
        while item.state == "proposed":
            answer = input("  [a]ccept, [e]dit, [d]rop, [A]ccept all the rest? ").strip()
            if answer in ("a", "", "A"):
                item.state = "accepted"
                rest = answer == "A"
            elif answer == "d":
                item.state = "dropped"
            elif answer == "e":
                try:
                    item.check = parse_check(input("  the check as YAML: "), "edited check")
                except DeskLoopError as exc:
                    print_err(str(exc))
                    continue
                item.state = "accepted"


def cmd_draft(args: argparse.Namespace) -> int:
    from app.authoring.review import CheckItem, DraftForm, load_review, parse_check, proposals
    from app.authoring.review import write_task as write_reviewed_task

    review = load_review(args.folder)
    marks = review.recording.marks
    messages: dict[int, str] = {}
    for item in args.message or []:
        number, _, text = item.partition("=")
        if not number.isdigit() or not text:
            raise _usage(f"--message {item!r}: use N=TEXT (N from 1, one per boundary)")
        messages[int(number)] = text
    extra = set(messages) - set(range(1, len(marks) + 1))
    if extra:
        raise _usage(
            f"--message: the recording has {len(marks)} boundaries, not "
            f"{', '.join(map(str, sorted(extra)))}"
        )
    checks = [CheckItem.proposed(p) for p in proposals(args.folder, args.id)]
    if not checks:
        print_err("no checks proposed (the recording has no state snapshots to compare)")
    _review(checks, args.proposals or ("ask" if sys.stdin.isatty() else "all"))
    checks += [
        CheckItem(parse_check(text, f"--check {text!r}"), "given with --check", "accepted")
        for text in args.check or []
    ]
    form = DraftForm(
        task_id=args.id,
        title=args.title or args.id,
        instruction=args.instruction,
        messages=[messages.get(n, mark.note) for n, mark in enumerate(marks, 1)],
        checks=checks,
        overwrite=args.force,
        proposed_for=args.id,
    )
    written = write_reviewed_task(review, form, args.tasks_dir)
    accepted = form.accepted
    task_checks = sum(item.phase is None for item in accepted)
    print(f"{task_checks} checks, {len(accepted) - task_checks} phase checks")
    print(f"wrote {written.task}\nwrote {written.reference}")
    print(f"Next: deskloop author verify {args.id}")
    return 0


# ------------------------------------------------------------------ verify


def cmd_verify(args: argparse.Namespace) -> int:
    from app.cli.common import open_store
    from app.proving.prove import proof_rows, prove_task
    from app.tasks.loader import find_task

    task = find_task(args.task, [args.tasks_dir])
    with open_store(args.db) as store:
        proof = run_async(
            prove_task(
                task,
                store,
                args.backend,
                repeats=args.repeats,
                progress=None if args.json else _progress,
            )
        )
    recorded = proof.record(args.backend) if args.record and proof.ok else None
    if args.json:
        print(
            json.dumps({**proof.as_json(), "recorded": None if recorded is None else str(recorded)})
        )
        return 0 if proof.ok else 1
    for what, ok, episode, reason in proof_rows(proof):
        print(f"{what:10} {'ok' if ok else 'FAILED':6} episode {episode or '-'}: {reason}")
    if proof.weak_checks:
        print("checks that passed on every skip replay (they cannot tell any sub-goal happened):")
        print(indent_block("\n".join(proof.weak_checks), "  "))
    print(f"{task.id}: {'proven' if proof.ok else 'NOT proven'}")
    if recorded is not None:
        print(f"proof recorded in {recorded} (deskloop tasks proofs lists it)")
    elif args.record:
        print("no proof recorded: the task is not proven")
    return 0 if proof.ok else 1


# ------------------------------------------------------------------ parser


class _UsageError(DeskLoopError):
    title = "Usage"


def _usage(message: str) -> _UsageError:
    return _UsageError(message)


def register(sub: Any) -> None:
    from app.desktops.factory import BACKENDS

    author = sub.add_parser(
        "author",
        help="author a task by demonstration: record, draft, verify",
        description="Record a person doing a workflow once on a desktop, compile it into a "
        "reference solution that replays, draft the task, and prove it. See docs/authoring.md.",
    )
    asub = author.add_subparsers(dest="author_command", metavar="STEP", required=True)

    rec = asub.add_parser(
        "record",
        help="record a demonstration through a VNC viewer",
        description="Start a desktop in a start state (a task's with --from, or the app on "
        "--assets), print a VNC address and password on 127.0.0.1, and record every input "
        "with its timing and frames until the end key or Ctrl-C. Written as it goes: a "
        "crash keeps everything up to that moment.",
    )
    rec.add_argument("--app", choices=["gimp", "blender", "kdenlive"], help="the app to open")
    rec.add_argument("--from", dest="from_task", metavar="TASK", help="start from this task")
    rec.add_argument(
        "--assets",
        nargs="*",
        type=Path,
        default=[],
        metavar="FILE",
        help="files uploaded to the desktop and opened in the app",
    )
    rec.add_argument("--id", help="the task id to draft (default: TASK-demo with --from)")
    rec.add_argument("--out", type=Path, help="recording folder (default: sessions/recordings/)")
    rec.add_argument("--backend", choices=list(BACKENDS), default="local")
    rec.add_argument("--port", type=int, default=0, help="proxy port (default: any free)")
    rec.add_argument("--width", type=int, default=1280)
    rec.add_argument("--height", type=int, default=800)
    rec.set_defaults(func=cmd_record)

    mark = asub.add_parser(
        "mark",
        help="mark a sub-goal boundary in a running recording",
        description="Ask the recorder writing FOLDER to mark a boundary now (its note "
        "drafts the next phase's message), or with --end to end the recording.",
    )
    mark.add_argument("folder", type=Path)
    mark.add_argument("--note", help="what the person says next (the phase message draft)")
    mark.add_argument("--end", action="store_true", help="end the recording instead")
    mark.set_defaults(func=cmd_mark)

    comp = asub.add_parser(
        "compile",
        help="show what a recording compiles to",
        description="Coalesce a recording into actions, sub-goals and reference steps "
        "(window and image-anchor guards) and print them, with what each sub-goal changed "
        "in the home (Δ, the state diff); a cut-off recording compiles up to where it ends.",
    )
    comp.add_argument("folder", type=Path)
    comp.add_argument("--json", action="store_true")
    comp.set_defaults(func=cmd_compile)

    dr = asub.add_parser(
        "draft",
        help="write the task and its reference into the library",
        description="Propose checks from the recording's state diff (start, each boundary, "
        "end) and let you accept, edit or drop each; write tasks/APP/ID.yaml (setup from the "
        "start state, phases from the boundaries with their own checks, the accepted and "
        "--check checks), its assets and references/ID.yaml, and validate them; nothing "
        "is kept when they do not validate.",
    )
    dr.add_argument("folder", type=Path)
    dr.add_argument("--id", required=True)
    dr.add_argument("--title")
    dr.add_argument("--instruction", required=True, help="the first instruction")
    dr.add_argument(
        "--message",
        action="append",
        metavar="N=TEXT",
        help="phase N's message (default: boundary N's note)",
    )
    dr.add_argument(
        "--check",
        action="append",
        metavar="YAML",
        help="a check of the task, e.g. '{check: file_exists, path: ~/a.png}'",
    )
    dr.add_argument(
        "--proposals",
        choices=["ask", "all", "none"],
        help="the checks proposed from the state diff: ask about each (default at a "
        "terminal), accept all (default otherwise), or none",
    )
    dr.add_argument("--force", action="store_true", help="replace a task of this id")
    dr.set_defaults(func=cmd_draft)

    ver = asub.add_parser(
        "verify",
        help="prove an authored task (reference ×3, null, untouched, skip replays)",
        description="Replay the reference on fresh desktops (each must score 1), run the "
        "null agent and the untouched start state (each must score 0), and replay the "
        "reference once per sub-goal with that sub-goal left out (each must fail a check). "
        "Checks that pass on every skip replay are named. --record writes the proof "
        "to the ledger when it holds.",
    )
    ver.add_argument("task", help="task id or file")
    ver.add_argument("--repeats", type=int, default=3, help="reference replays (default 3)")
    ver.add_argument("--backend", choices=list(BACKENDS), default="local")
    ver.add_argument(
        "--record",
        action="store_true",
        help="when proven, write the proof to the ledger (proofs/ID.json beside the task) "
        "that `tasks proofs` reads, as `tasks verify --record` does",
    )
    ver.add_argument("--json", action="store_true")
    ver.set_defaults(func=cmd_verify)
