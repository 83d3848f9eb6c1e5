"""The whole authoring flow through the command line, on real GIMP: `author record`
(a scripted VNC client plays the person through the real proxy), `author mark` from
another process, `author draft`, and `author verify` with its skip replays."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.authoring.recording import WindowEvent, read_recording
from app.checks.tree import leaves
from app.rfb.client import VNCClient, connect
from app.tasks.loader import load_task
from app.tasks.proofs import proof_path, read_proof

pytestmark = pytest.mark.desktop

REPO = Path(__file__).resolve().parents[2]
PHOTO = REPO / "tasks" / "gimp" / "assets" / "photo.png"
CTRL, ALT, SHIFT = 0xFFE3, 0xFFE9, 0xFFE1
ENTER = 0xFF0D


def deskloop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        cwd=REPO,
        text=True,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=900,
        check=False,
    )


async def wait_title(folder: Path, pattern: str, timeout: float = 120) -> None:
    """Until the recording shows a focused window whose title matches (what a person
    watching the screen would wait for)."""
    deadline = time.monotonic() + timeout
    while True:
        titles = [e.title for e in read_recording(folder).events if isinstance(e, WindowEvent)]
        if titles and re.search(pattern, titles[-1]):
            return
        assert time.monotonic() < deadline, f"no window {pattern!r}; last titles {titles[-3:]}"
        await asyncio.sleep(0.2)


async def press(person: VNCClient, *keysyms: int) -> None:
    await person.key_combo(list(keysyms))
    await person.settle(timeout=5, quiet=0.3)


async def play_the_person(folder: Path, host: str, port: int, password: str) -> None:
    person = await connect(host, port, password)
    try:
        await wait_title(folder, r"^\[photo\].*GIMP$")
        await person.settle(timeout=10, quiet=1.0)
        await press(person, ALT, ord("i"))  # Image > Transform > Flip Horizontally
        await press(person, ord("t"))
        await press(person, ord("h"))
        await wait_title(folder, r"^\*\[photo\]")
        marked = deskloop(
            "author",
            "mark",
            str(folder),
            "--note",
            "Now export it as photo-flipped.png on the Desktop.",
        )
        assert marked.returncode == 0, marked.stderr
        while not read_recording(folder).marks:
            await asyncio.sleep(0.1)
        await press(person, CTRL, SHIFT, ord("e"))
        await wait_title(folder, r"^Export Image$")
        await press(person, CTRL, ord("a"))
        await person.type_text("photo-flipped.png")
        await press(person, ENTER)
        await wait_title(folder, r"^Export Image as PNG$")
        await press(person, ENTER)
        await wait_title(folder, r"\(exported\)")
        await person.key_combo([CTRL, ALT, SHIFT, ord("q")])
    finally:
        await person.close()


async def test_record_draft_and_verify_a_gimp_workflow(tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    recorder = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "app.cli",
        "author",
        "record",
        "--app",
        "gimp",
        "--assets",
        str(PHOTO),
        "--id",
        "photo-demo",
        "--out",
        str(folder),
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert recorder.stdout is not None
    found = None
    while found is None:
        line = (await asyncio.wait_for(recorder.stdout.readline(), 300)).decode()
        assert line, "author record ended before it printed its address"
        found = re.search(r"viewer to ([\d.]+):(\d+) \(password (\S+)\)", line)
    await play_the_person(folder, found[1], int(found[2]), found[3])
    out, err = await asyncio.wait_for(recorder.communicate(), 120)
    assert recorder.returncode == 0, err.decode()
    assert "Recorded" in out.decode() and "1 boundaries" in out.decode()
    # The mark was said where the author looks, and the hint names the id given.
    assert re.search(r"boundary 1 marked at [\d.]+ s \(note: ", err.decode()), err.decode()
    assert f"author draft {folder} --id photo-demo --instruction" in out.decode()

    library = tmp_path / "tasks"
    drafted = deskloop(
        "--tasks-dir",
        str(library),
        "author",
        "draft",
        str(folder),
        "--id",
        "photo-demo",
        "--instruction",
        "The photo ~/Desktop/photo.png is open in GIMP. Mirror it left to right.",
        "--check",
        "{check: image_size, path: ~/Desktop/photo-flipped.png, width: 400, height: 300}",
        "--check",
        "{check: image_similarity, path: ~/Desktop/photo-flipped.png, "
        "reference: assets/photo-demo/photo.png, transform: flip_horizontal, threshold: 0.95}",
    )
    assert drafted.returncode == 0, drafted.stderr
    task = load_task(library / "gimp" / "photo-demo.yaml")
    # Checks proposed from the state diff were accepted (not a TTY: all of them),
    # beside the two given: the export exists, and looks like what was produced.
    produced = [
        (
            leaf.spec.name,
            getattr(leaf.params, "path", None),
            getattr(leaf.params, "reference", None),
        )
        for leaf in leaves(task.evaluate)
    ]
    assert ("file_exists", "~/Desktop/photo-flipped.png", None) in produced
    expected = "assets/photo-demo/expected/Desktop/photo-flipped.png"
    assert ("image_similarity", "~/Desktop/photo-flipped.png", expected) in produced
    assert (library / "gimp" / "assets/photo-demo/expected/Desktop/photo-flipped.png").is_file()
    valid = deskloop("tasks", "validate", str(library))
    assert valid.returncode == 0, valid.stdout + valid.stderr

    verified = deskloop(
        "--tasks-dir",
        str(library),
        "--db",
        str(tmp_path / "proof.db"),
        "author",
        "verify",
        "photo-demo",
        "--repeats",
        "1",
        "--record",
        "--json",
    )
    proof = json.loads(verified.stdout)
    assert verified.returncode == 0, json.dumps(proof, indent=1) + verified.stderr
    assert [r["mode"] for r in proof["runs"]] == ["reference", "null", "untouched"]
    assert [s["subgoal"] for s in proof["skips"]] == [0, 1]
    assert all(s["ok"] for s in proof["skips"])
    # One round of episodes proves it: the ledger holds the proof `tasks proofs` reads.
    proven = load_task(library / "gimp" / "photo-demo.yaml")
    assert proof["recorded"] == str(proof_path(proven))
    assert read_proof(proven).state == "proven"


async def test_a_recording_killed_midway_keeps_its_events_and_compiles(tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    recorder = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "app.cli",
        "author",
        "record",
        "--app",
        "gimp",
        "--assets",
        str(PHOTO),
        "--id",
        "photo-killed",
        "--out",
        str(folder),
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert recorder.stdout is not None
    found = None
    while found is None:
        line = (await asyncio.wait_for(recorder.stdout.readline(), 300)).decode()
        assert line, "author record ended before it printed its address"
        found = re.search(r"viewer to ([\d.]+):(\d+) \(password (\S+)\)", line)
    person = await connect(found[1], int(found[2]), found[3])
    try:
        await wait_title(folder, r"^\[photo\].*GIMP$")
        await press(person, ALT, ord("i"))
        await press(person, ord("t"))
        await press(person, ord("h"))
        await wait_title(folder, r"^\*\[photo\]")
        recorder.kill()  # SIGKILL: no chance to write the end
        await recorder.wait()
    finally:
        await person.close()
    compiled = deskloop("author", "compile", str(folder), "--json")
    assert compiled.returncode == 0, compiled.stderr
    summary = json.loads(compiled.stdout)
    assert summary["ended"] is False
    assert summary["actions"] >= 2  # alt+i, then t and h (typed)
