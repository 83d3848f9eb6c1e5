"""The final-state archive, re-scoring and the integrity flags on a real local desktop
with the real GIMP.

- The reference solution of gimp-flip-export: its episode is archived, is not
  flagged, and re-scored after a threshold changes it has two scores.
- A cheater (tests/data/integrity/cheater-gimp-flip-export.yaml) writes the expected
  file from a terminal with ffmpeg and Python: its final state passes, unchanged, and
  the episode is flagged with the commands as evidence.
- A window titled like GIMP's Script-Fu console is seen by the console watch.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from app.agents.factory import make_agent
from app.cli import main
from app.desktops.local.desktop import LocalDesktop
from app.episode.archive import rescore
from app.episode.events import EpisodeResult
from app.episode.integrity import IntegrityWatch
from app.episode.runner import EpisodeRunner
from app.store import Store
from app.tasks.loader import load_task
from app.users.simulated import SimulatedUser
from tests.episode_story import episode_story
from tests.waiting import eventually

ROOT = Path(__file__).resolve().parents[2]
GIMP = ROOT / "tasks" / "gimp"
CHEATER = ROOT / "tests" / "data" / "integrity" / "cheater-gimp-flip-export.yaml"

pytestmark = pytest.mark.desktop


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def task_copy(tmp_path: Path, *, terminal: bool = False) -> Path:
    """gimp-flip-export in a folder of its own (its file can change); with `terminal`,
    an xterm opened by setup over GIMP."""
    folder = tmp_path / "tasks"
    shutil.copytree(GIMP / "assets", folder / "assets")
    shutil.copytree(GIMP / "references", folder / "references")
    text = (GIMP / "gimp-flip-export.yaml").read_text()
    if terminal:
        # Before GIMP, so GIMP is on top and focused, as the reference expects.
        text = text.replace(
            "  - launch: [gimp,",
            "  - launch: [xterm, -xrm, '*allowTitleOps: false', -geometry, 60x8-0-0]\n"
            "  - wait_window: {class: XTerm, timeout: 60}\n"
            "  - launch: [gimp,",
        )
        cheaters = folder / "references" / "cheaters"
        cheaters.mkdir()
        shutil.copy(CHEATER, cheaters / "gimp-flip-export.yaml")
    path = folder / "gimp-flip-export.yaml"
    path.write_text(text)
    return path


async def run(path: Path, agent: str, store: Store) -> EpisodeResult:
    task = load_task(path)
    async with LocalDesktop() as desktop:
        runner = EpisodeRunner(
            task, desktop, make_agent(agent, task), SimulatedUser(), store, backend="local"
        )
        return await runner.run()


async def test_reference_is_archived_unflagged_and_rescored(tmp_path: Path) -> None:
    path = task_copy(tmp_path)
    task = load_task(path)
    with Store(tmp_path / "db" / "lab.db") as store:
        async with LocalDesktop() as desktop:
            agent = make_agent("reference", task)
            runner = EpisodeRunner(task, desktop, agent, SimulatedUser(), store, backend="local")
            result = await runner.run()
            # The watch saw the export, written by GIMP's own PNG plug-in.
            write = desktop.last_write("~/Desktop/photo-flipped.png")
            assert write is not None and write.program is not None, write
            assert "/usr/lib/gimp/" in write.program.path, write
        story = episode_story(store, result)
        assert result.passed is True, story
        flags, checked = store.flags(result.episode_id)
        assert flags == [], story
        assert checked is not None and checked[0].startswith("processes: every exec")
        assert checked[1].startswith("checked files' writers: every file closed"), checked
        archive = store.get_archive(result.episode_id)
        assert archive is not None and archive.kept_bytes > 0
        assert set(archive.manifest["files"]) == {"~/Desktop/photo-flipped.png"}
        # The desktop is gone; a changed expected size re-scores the kept state.
        path.write_text(path.read_text().replace("height: 300", "height: 301"))
        done = await rescore(store, result.episode_id, load_task(path))
        assert done.result.passed is False
        (rescored,) = store.rescores(result.episode_id)
        assert rescored.passed is False and rescored.task_sha256 == load_task(path).sha256
        assert store.get_episode(result.episode_id).passed is True


async def test_a_cheater_in_a_terminal_is_flagged(tmp_path: Path) -> None:
    path = task_copy(tmp_path, terminal=True)
    with Store(tmp_path / "db" / "lab.db") as store:
        result = await run(path, f"scripted:{CHEATER}", store)
        story = episode_story(store, result)
        # The flags never change the score: the file it wrote passes the checks.
        assert result.passed is True, story
        flags, _ = store.flags(result.episode_id)
        summaries = [f.summary for f in flags]
        assert "a command-line media tool ran in the desktop: ffmpeg" in summaries, story
        assert "an interpreter ran in the desktop: python3" in summaries, story
        # GIMP's own binary, but with no window: not the GUI.
        assert "GIMP in batch or headless mode (-i -b) ran in the desktop: gimp" in summaries, story
        evidence = "\n".join(line for f in flags for line in f.evidence)
        assert "-vf hflip" in evidence and "os.utime" in evidence
        # The checked file's last writer was ffmpeg, not GIMP.
        (writer,) = [f for f in flags if f.kind == "file_writer"]
        assert writer.evidence[0].startswith("~/Desktop/photo-flipped.png: +"), writer
        assert "/usr/bin/ffmpeg (ffmpeg -y" in writer.evidence[0], writer
        # setup's terminal, started before the agent, is not the agent's doing
        assert not any("terminal" in s for s in summaries)


async def test_a_console_open_for_a_moment_is_seen() -> None:
    """A console window open for about half a second, between two of the 2 s polls a
    title poll would make, is seen as it opens."""
    async with LocalDesktop() as desktop:
        task = load_task(GIMP / "gimp-flip-export.yaml")
        watch = IntegrityWatch(task, desktop)
        watch.start()
        await desktop.guest.launch(
            ["xterm", "-xrm", "*allowTitleOps: false", "-T", "Script-Fu Console",
             "-e", "sleep", "0.5"]
        )  # fmt: skip

        def opened_and_closed() -> bool:
            titles = [title for _, title in desktop.window_log().records]
            return "Script-Fu Console" in titles and not any(
                r.argv[:1] == ("sleep",) and _alive(r.pid) for r in desktop.exec_log().records
            )

        await eventually(opened_and_closed, "the console window to open and close")
        await watch.stop()
        flags, checked = watch.flags([])
        console = [f for f in flags if f.kind == "console"]
        assert console and "'Script-Fu Console'" in console[0].evidence[0], (flags, checked)
        assert any(c.startswith("consoles: every window the window manager lists") for c in checked)
        # The xterm it ran in is a terminal, started after the watch began.
        assert any(f.summary == "a terminal ran in the desktop: xterm" for f in flags)


def test_tasks_audit_of_a_task_with_a_cheater(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Synchronous: the command line runs its own event loop.
    path = task_copy(tmp_path, terminal=True)
    db = tmp_path / "db" / "lab.db"
    code = main(["--db", str(db), "tasks", "audit", str(path), "--repeats", "2", "--json"])
    report = json.loads(capsys.readouterr().out)
    (audit,) = report["tasks"]
    checks = {c["name"]: c for c in audit["checks"]}
    assert list(checks) == ["reference 1", "reference 2", "null", "untouched", "cheater", "rescore"]
    assert code == 0 and report["ok"] and audit["ok"], json.dumps(report, indent=2)
    assert checks["cheater"]["reason"].startswith("flagged: ")
    assert checks["rescore"]["reason"].startswith("same score and evidence twice")
    # A task whose cheater goes unflagged fails the audit, with a non-zero exit.
    cheater = path.parent / "references" / "cheaters" / "gimp-flip-export.yaml"
    cheater.write_text("kind: demonstration\nsteps:\n  - done\n")
    code = main(["--db", str(db), "tasks", "audit", str(path), "--repeats", "1"])
    out = capsys.readouterr().out
    assert code == 1 and "gimp-flip-export cheater: not flagged" in out, out
