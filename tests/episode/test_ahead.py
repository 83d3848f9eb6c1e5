"""The next episode's start prepared while the current one runs, on real local
desktops (xterm tasks whose references type their proof): the second task of a run
starts on a desktop set up during the first, recorded as warm; a start prepared for
another task is closed, not used; closing while a start is prepared cancels it and
closes its desktop."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path

import pytest

from app.cli import main
from app.desktops.base import Desktop
from app.episode.ahead import DesktopsByKind, StartAhead
from app.episode.launch import DesktopSpec, make_spec_desktop
from app.store import Store
from app.tasks.loader import load_task
from app.tasks.model import Task
from tests.waiting import eventually

pytestmark = [pytest.mark.desktop, pytest.mark.timeout(300)]

TASK = """\
id: {id}
app: gimp
level: L1
title: Make {name}
instruction: Create the file ~/{name}.
setup:
  - launch: [xterm]
  - wait_window: {{class: {window}, timeout: 60}}
reference: references/{id}.yaml
budget: {{steps: 10, seconds: 120}}
evaluate: {{check: file_exists, path: ~/{name}}}
"""
SCRIPT = '- type: "touch ~/{name}"\n- key: enter\n- wait: {wait}\n- done\n'


def _task(root: Path, task_id: str, *, wait: float = 0.5, window: str = "XTerm") -> Task:
    """An xterm task `task_id` (its proof file: `task_id`.txt) in `root/tasks/gimp`;
    its reference waits `wait` s after typing; its setup awaits a window of `window`."""
    folder = root / "tasks" / "gimp"
    (folder / "references").mkdir(parents=True, exist_ok=True)
    name = f"{task_id}.txt"
    path = folder / f"{task_id}.yaml"
    path.write_text(TASK.format(id=task_id, name=name, window=window))
    (folder / "references" / f"{task_id}.yaml").write_text(SCRIPT.format(name=name, wait=wait))
    return load_task(path)


def _counting(made: list[Desktop]) -> DesktopsByKind:
    """Local desktops, each one made appended to `made`."""

    def make(spec: DesktopSpec) -> Desktop:
        desktop = make_spec_desktop(spec)
        made.append(desktop)
        return desktop

    return DesktopsByKind("local", make)


def test_the_second_task_of_a_run_starts_on_a_desktop_set_up_during_the_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The first episode lasts long enough (its reference waits) for the second one's
    # desktop to be set up meanwhile, even on a loaded machine.
    _task(tmp_path, "xa", wait=12)
    _task(tmp_path, "xb")
    db = tmp_path / "db.sqlite"
    argv = ["--db", str(db), "--tasks-dir", str(tmp_path / "tasks"), "demo", "xa", "xb"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "[ahead] next task's desktop ready in" in err
    assert "this task waited" not in err  # the second task's desktop was ready when it began
    with Store(db) as store:
        first, second = sorted(store.list_episodes(), key=lambda e: e.id)
        assert (first.task_id, second.task_id) == ("xa", "xb")
        assert first.passed and second.passed
        assert first.setup is not None and second.setup is not None
        assert (first.setup["warm"], second.setup["warm"]) == (False, True)
        # The second one's reset and setup are recorded as the first one's are...
        assert [text for _, text in second.setup["lines"]] == [
            text for _, text in first.setup["lines"]
        ]
        # ...and were done before the first episode ended: its start waited for none.
        done = datetime.fromisoformat(second.setup["started_at"]).timestamp() + float(
            second.setup["seconds"]
        )
        assert first.ended_at is not None and done < first.ended_at.timestamp()


def test_run_repeat_prints_each_episode_as_it_ends_the_repeats_on_warm_desktops(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _task(tmp_path, "xr", wait=3)
    db = tmp_path / "db.sqlite"
    argv = ["--db", str(db), "--tasks-dir", str(tmp_path / "tasks"), "run", "xr"]
    assert main([*argv, "--repeat", "3", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(line["task"], line["passed"]) for line in lines] == [("xr", True)] * 3
    with Store(db) as store:
        episodes = sorted(store.list_episodes(), key=lambda e: e.id)
        assert [e.id for e in episodes] == [line["episode"] for line in lines]
        assert [e.setup["warm"] for e in episodes if e.setup is not None] == [False, True, True]
    with pytest.raises(SystemExit):
        main([*argv, "--repeat", "0"])
    assert "0 is less than 1" in capsys.readouterr().err


async def test_a_start_prepared_for_another_task_is_closed_not_used(tmp_path: Path) -> None:
    xa, xb = _task(tmp_path, "xa"), _task(tmp_path, "xb")
    made: list[Desktop] = []
    desktops = _counting(made)
    said: list[str] = []
    ahead = StartAhead(desktops, what="trial", say=said.append)
    try:
        ahead.prepare(xa)
        assert await ahead.take(xb) is None
        assert len(made) == 1 and made[0].info().state == "closed"
        assert desktops.alive() == 0
        assert "closed the desktop prepared for xa: xb came next" in said
        # Nothing is left to take afterwards: the episode resets a desktop itself.
        assert await ahead.take(xa) is None
    finally:
        await ahead.close()
        await desktops.close()


async def test_closing_while_a_start_is_prepared_cancels_it_and_closes_its_desktop(
    tmp_path: Path,
) -> None:
    # Its setup awaits a window that never opens: the start is still being prepared
    # when it is closed.
    never = _task(tmp_path, "xn", window="Nope")
    made: list[Desktop] = []
    desktops = _counting(made)
    said: list[str] = []
    ahead = StartAhead(desktops, say=said.append)
    try:
        ahead.prepare(never)
        await eventually(
            lambda: bool(made) and made[0].info().state == "running",
            "the prepared desktop to be started",
        )
        begun = time.monotonic()
        await ahead.close()
        # Cancelled, not waited out (the setup's wait is 60 s).
        assert time.monotonic() - begun < 30
        assert made[0].info().state == "closed" and desktops.alive() == 0
        assert said == []  # it never became ready, nor failed
        assert await ahead.take(never) is None
    finally:
        await desktops.close()
