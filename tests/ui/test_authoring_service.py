"""The Author screen's headless service, without a terminal, on a real local desktop:
a demonstration recorded from a task's start state through the real recording proxy
(a scripted VNC client plays the author's viewer), marked through the service and
ended by the viewer's chord; then reviewed, drafted into a library and proven.

And the Author screen itself on a real desktop: the live view, `m` with a note, and
the end noticed when the viewer's chord ends the recording."""

from __future__ import annotations

import ast
import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from textual.widgets import Input, RichLog, Select

from app.authoring.review import (
    CheckItem,
    DraftForm,
    load_review,
    parse_check,
    proposals,
    write_task,
)
from app.core.errors import TaskError
from app.desktops.local.desktop import LocalDesktop
from app.proving.prove import proof_rows
from app.rfb.client import VNCClient, connect
from app.store import Store
from app.tasks.loader import load_task
from app.ui.app import DeskLoopApp
from app.ui.halfblock import HalfBlockView
from app.ui.modals import PromptScreen
from app.ui.screens.author import AuthorScreen
from app.ui.services.authoring import RecordingSession, StartRequest, verify_task
from app.ui.services.desktops import DesktopPool
from tests.ui.helpers import screen_text, wait_until

pytestmark = pytest.mark.desktop

CTRL, ALT, SHIFT = 0xFFE3, 0xFFE9, 0xFFE1

XTERM_START = """\
id: xterm-start
app: gimp
level: L1
title: An xterm to work in
instruction: Work in the xterm.
setup:
  - launch: [xterm, -xrm, "*allowTitleOps: false", -geometry, 60x12+40+40,
             -title, author-term, -e, sh]
  - wait_window: {name: author-term, timeout: 60}
evaluate: {check: file_not_exists, path: ~/nothing-here}
"""


def start_library(root: Path) -> Path:
    (root / "gimp").mkdir(parents=True)
    (root / "gimp" / "xterm-start.yaml").write_text(XTERM_START)
    return root


async def until(condition: Callable[[], Awaitable[bool] | bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if isinstance(value, Awaitable):
            value = await value
        if value:
            return
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.1)


async def play(person: VNCClient, guest_file: Callable[[str], Awaitable[bool]], n: str) -> None:
    await person.type_text(f"echo {n} > ~/{n}.txt\n")
    await until(lambda: guest_file(f"~/{n}.txt"))


async def test_record_review_write_and_verify_through_the_service(tmp_path: Path) -> None:
    library = start_library(tmp_path / "library")
    pool = DesktopPool("local")
    request = StartRequest("xterm-files", from_task=load_task(library / "gimp/xterm-start.yaml"))
    assert request.problems() == []
    assert StartRequest("", app="paint").problems() == [
        "id: the task id is needed",
        "app: choose one of gimp, blender, kdenlive (or a task to start from)",
    ]
    session = RecordingSession(request, pool, tmp_path / "rec")
    run = asyncio.create_task(session.run())
    try:
        await until(lambda: session.state == "recording" or run.done(), 120)
        assert session.state == "recording", session.error
        assert session.entry is not None
        assert session.entry.busy == "recording a demonstration"  # Desktops shows it
        assert session.endpoint() is not None  # the live view watches the desktop itself
        assert any("launch" in line for line in session.log)  # the setup's progress
        desktop = session.entry.desktop
        assert isinstance(desktop, LocalDesktop)
        address = session.address
        assert address is not None and address.host == "127.0.0.1"
        person = await connect(address.host, address.port, address.password)
        try:
            await person.pointer(120, 80, 1)  # focus the xterm
            await person.pointer(120, 80, 0)
            await play(person, desktop.guest.exists, "one")
            session.mark("Now the second file")
            await play(person, desktop.guest.exists, "two")
            await person.key_combo([CTRL, ALT, SHIFT, ord("q")])  # the viewer's end
            # The end: the last capture and the analysis of every snapshot run first.
            folder = await asyncio.wait_for(run, 180)
        finally:
            await person.close()
    finally:
        if not run.done():
            session.end()
            await run
        await pool.close_all()
    assert (session.state, session.end_reason) == ("ended", "the author's end key")
    assert session.entry is not None and session.entry.busy is None
    assert session.entry.info().state != "running"  # the recording's desktop is stopped
    assert [m.note for m in session.marks] == ["Now the second file"]
    assert any("boundary 1: Now the second file" in line for line in session.log)
    assert any("window: author-term" in line for line in session.log)
    assert session.counts["key"] > 10 and session.counts["frame"] >= 1
    with pytest.raises(ValueError, match="cannot mark: the recording is ended"):
        session.mark()

    review = await asyncio.to_thread(load_review, folder)
    subgoals = review.subgoals()
    assert [note for _, note in subgoals] == ["Now the second file", None]
    # The typed text, in order; how it splits into type() steps depends on the pauses
    # between keys, which a loaded machine stretches.
    shown = "\n".join(subgoals[0][0])
    typed = "".join(ast.literal_eval(t) for t in re.findall(r"type\(('(?:[^'\\]|\\.)*')\)", shown))
    assert "echo one > ~/one.txt\n" in typed, shown
    # More than the start and the end (a substring test read "142 events" as "2 events").
    assert len(review.recording.events) > 2 and "ended normally" in review.summary
    # What each sub-goal changed, from the recorder's snapshots.
    assert len(review.changed) == 2
    assert "created ~/one.txt" in review.changed[0] and "two.txt" not in review.changed[0]
    assert "created ~/two.txt" in review.changed[1]
    # The recorder captured the home at the start, the boundary and the end: the files
    # the person made are proposed, for the task and for the phase whose sub-goal made them.
    proposed = proposals(folder, review.start.task.id)
    final = [(p.check["check"], p.check.get("path")) for p in proposed if p.phase is None]
    first = [(p.check["check"], p.check.get("path")) for p in proposed if p.phase == 1]
    assert ("file_exists", "~/one.txt") in final and ("file_exists", "~/two.txt") in final
    assert ("file_exists", "~/one.txt") in first and ("file_exists", "~/two.txt") not in first

    with pytest.raises(TaskError, match=r"check\.path: file_exists needs this parameter"):
        parse_check("{check: file_exists}")
    with pytest.raises(TaskError, match="not YAML"):
        parse_check("{check: [")
    checks = [
        CheckItem(parse_check("{check: file_exists, path: ~/one.txt}"), "by hand", "accepted"),
        CheckItem(parse_check("{check: file_exists, path: ~/two.txt}"), "by hand", "accepted"),
        CheckItem(parse_check("{check: file_exists, path: ~/never.txt}"), "proposed"),
    ]
    tasks = tmp_path / "tasks"
    form = DraftForm("xterm-files", "", "Make one.txt.", [""], checks)
    with pytest.raises(TaskError, match=r"phases\[0\]\.message: empty"):
        await asyncio.to_thread(write_task, review, form, tasks)
    assert not (tasks / "gimp" / "xterm-files.yaml").exists()
    form.messages = ["Now the second file, two.txt."]
    written = await asyncio.to_thread(write_task, review, form, tasks)
    task = load_task(written.task)
    assert task.title == "xterm-files" and "never.txt" not in written.task.read_text()

    lines: list[str] = []
    with Store(tmp_path / "db.sqlite") as store:
        proof = await verify_task(written.task, store, "local", repeats=1, progress=lines.append)
    rows = proof_rows(proof)
    assert [(what, ok) for what, ok, _, _ in rows] == [
        ("reference", True),
        ("null", True),
        ("untouched", True),
        ("skip 1", True),
        ("skip 2", True),
    ], rows
    assert proof.ok
    # Each check passed on the replay that skipped the other sub-goal but failed on its
    # own: each tells its sub-goal, so none is named weak.
    assert {c for skip in proof.skips for c in skip.still_passing} == {
        "evaluate.all[0] (file_exists)",
        "evaluate.all[1] (file_exists)",
    }
    assert proof.weak_checks == []
    assert any("skip sub-goal 2: ok" in line for line in lines)


async def test_the_author_screen_records_marks_and_notices_the_viewers_end(
    tmp_path: Path,
) -> None:
    app = DeskLoopApp(
        db=tmp_path / "db" / "d.db",
        tasks_dir=start_library(tmp_path / "tasks"),
        start_mode="author",
    )
    async with app.run_test(size=(160, 50)) as pilot:
        screen = app.screen
        assert isinstance(screen, AuthorScreen)
        screen.query_one("#author-from", Select).value = "xterm-start"
        screen.query_one("#author-id", Input).value = "xterm-files"
        screen.query_one("#author-id", Input).focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: screen.stage == "record", 5, "the record stage")
        session = screen.session
        assert session is not None and app.recording is session
        assert session.folder.parent == tmp_path / "db" / "recordings"
        await wait_until(pilot, lambda: session.state == "recording", 120, "recording")
        address = session.address
        assert address is not None
        await wait_until(
            pilot,
            lambda: f"{address.port} password {address.password}" in screen_text(app),
            5,
            "the viewer's address shown",
        )
        view = screen.query_one("#author-frame", HalfBlockView)
        await wait_until(pilot, lambda: view.has_frame, 30, "the live view")
        person = await connect(address.host, address.port, address.password)
        try:
            await person.pointer(120, 80, 1)
            await person.pointer(120, 80, 0)
            await person.type_text("echo one > ~/one.txt\n")
            screen.set_focus(None)
            await pilot.press("m")
            await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen), 5, "note")
            await pilot.press(*"Then two", "enter")
            await wait_until(pilot, lambda: len(session.marks) == 1, 60, "the mark")
            log = screen.query_one("#author-events", RichLog)
            await wait_until(
                pilot,
                lambda: any("boundary 1: Then two" in line.text for line in log.lines),
                5,
                "the boundary listed",
            )
            await person.type_text("echo two > ~/two.txt\n")
            await person.key_combo([CTRL, ALT, SHIFT, ord("q")])
        finally:
            await person.close()
        await wait_until(pilot, lambda: screen.stage == "review", 180, "the review")
        assert session.end_reason == "the author's end key"
        assert screen.query_one("#author-msg-1", Input).value == "Then two"
        assert screen.query_one("#author-task-id", Input).value == "xterm-files"
