"""Every entry point that starts an episode asks libvirt for the task app's image.

Each of the six (`deskloop run`, `deskloop human`, `tasks verify`, the TUI's episode
session, `app.env` and a batch) is driven, for a Blender task, as far as the libvirt
desktop it would boot. The desktop class is replaced by a recording subclass whose
reset records instead of booting: what is tested is the callers' wiring, not libvirt.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import app.desktops.libvirt
from app.agents.spec import PersonSpec
from app.batch import BatchOptions, start_batch
from app.cli import main
from app.core.conversation import Message
from app.core.errors import AgentError, DeskLoopError, DesktopError
from app.desktops.factory import make_desktop
from app.desktops.inventory import BackendListing
from app.desktops.libvirt import LibvirtDesktop
from app.desktops.pass_through import PassThroughDesktop
from app.env import DeskLoopEnv
from app.episode.launch import (
    build_agent,
    desktop_spec,
    fits,
    launch,
    task_desktop,
    task_image,
)
from app.proving.verify import verify_tasks
from app.store import Store
from app.tasks.loader import load_task
from app.tasks.model import Task
from app.ui.app import DeskLoopApp
from app.ui.services.desktops import DesktopPool
from app.users.simulated import ReadsConversation, SimulatedUser
from tests.ui.helpers import wait_until

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "tasks"
BLENDER_TASK = TASKS / "blender" / "blender-move-cube.yaml"
GIMP_TASK = TASKS / "gimp" / "gimp-flip-export.yaml"
NOT_BOOTED = "recorded, not booted: this test stops at the desktop's config"


class RecordingDesktop(LibvirtDesktop):
    """A libvirt desktop as configured by its caller, that never boots."""

    made: list[RecordingDesktop] = []  # noqa: RUF012 (reset by the fixture per test)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.resets = 0
        RecordingDesktop.made.append(self)

    async def reset(self) -> None:
        self.resets += 1
        raise DesktopError(NOT_BOOTED)

    async def reset_to(self, key: str, setup: Callable[[], Any]) -> bool:
        self.resets += 1
        raise DesktopError(NOT_BOOTED)

    async def close(self) -> None:
        return None


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[RecordingDesktop]]:
    """The libvirt desktops made while the test runs, none of them booted."""
    monkeypatch.delenv("DESKLOOP_IMAGE", raising=False)
    # The factory imports the class from app.desktops.libvirt when it makes a desktop.
    monkeypatch.setattr(app.desktops.libvirt, "LibvirtDesktop", RecordingDesktop)
    RecordingDesktop.made = []
    # Were the class looked up elsewhere, the entry points below would boot real VMs.
    assert isinstance(make_desktop("libvirt"), RecordingDesktop)
    RecordingDesktop.made = []
    yield RecordingDesktop.made


def the_blender_desktop(made: list[RecordingDesktop]) -> None:
    """The entry point made one desktop, of the blender image, and tried to start it."""
    assert [(d.image_name, d.name) for d in made] == [("blender", "run-blender")]
    assert made[0].resets == 1


def cli_options(tmp_path: Path) -> list[str]:
    return ["--db", str(tmp_path / "d.db"), "--tasks-dir", str(TASKS)]


def blender() -> Task:
    task = load_task(BLENDER_TASK)
    assert task.app == "blender"
    return task


def test_deskloop_run(
    tmp_path: Path, recorded: list[RecordingDesktop], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            *cli_options(tmp_path),
            "run",
            str(BLENDER_TASK),
            "--backend",
            "libvirt",
            "--agent",
            "null",
        ]
    )
    assert code == 1 and NOT_BOOTED in capsys.readouterr().out
    the_blender_desktop(recorded)


def test_deskloop_human(
    tmp_path: Path,
    recorded: list[RecordingDesktop],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # no commands typed
    code = main([*cli_options(tmp_path), "human", str(BLENDER_TASK), "--backend", "libvirt"])
    assert code == 1 and NOT_BOOTED in capsys.readouterr().out
    the_blender_desktop(recorded)


async def test_tasks_verify(tmp_path: Path, recorded: list[RecordingDesktop]) -> None:
    with Store(tmp_path / "d.db") as store:
        (verdict,) = await verify_tasks([blender()], store, "libvirt", modes=("null",))
    assert not verdict.ok and NOT_BOOTED in verdict.runs[0].reason
    the_blender_desktop(recorded)


async def test_the_tui_session(tmp_path: Path, recorded: list[RecordingDesktop]) -> None:
    lab = DeskLoopApp(
        db=tmp_path / "d.db",
        tasks_dir=TASKS,
        backend="libvirt",
        libvirt_listing=lambda: BackendListing("libvirt", "qemu:///system"),
    )
    async with lab.run_test(size=(160, 50)) as pilot:
        task = next(t for t in lab.tasks if t.id == "blender-move-cube")
        session = lab.start_episode(task, "null", "simulated")
        await wait_until(pilot, lambda: session.ended, 20, "the episode's end")
        assert session.result is not None and NOT_BOOTED in (session.result.error or "")
    the_blender_desktop(recorded)


def test_the_gymnasium_env(tmp_path: Path, recorded: list[RecordingDesktop]) -> None:
    env = DeskLoopEnv(blender(), backend="libvirt", store=tmp_path / "d.db")
    try:
        with pytest.raises(DeskLoopError, match="reset failed"):
            env.reset()
    finally:
        env.close()
    the_blender_desktop(recorded)


async def test_a_batch(tmp_path: Path, recorded: list[RecordingDesktop]) -> None:
    with Store(tmp_path / "d.db") as store:
        options = BatchOptions(backend="libvirt", retries=0)
        runner = start_batch(
            store, [blender()], ["null"], 1, options, progress_stream=io.StringIO()
        )
        (row,) = await runner.run()
        assert row.episode is not None and NOT_BOOTED in (row.episode.error or "")
    the_blender_desktop(recorded)


# -- the composition root's own answers -------------------------------------------


def test_the_image_is_the_task_app_unless_deskloop_image_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("DESKLOOP_IMAGE", raising=False)
    assert task_image("libvirt", blender()) == "blender"
    assert task_image("local", blender()) is None  # one local desktop runs every app
    monkeypatch.setenv("DESKLOOP_IMAGE", "all-apps")
    assert task_image("libvirt", blender()) == "all-apps"


async def test_a_desktop_passed_in_stays_its_owners(
    tmp_path: Path, recorded: list[RecordingDesktop]
) -> None:
    closed: list[str] = []

    class Kept(RecordingDesktop):
        async def close(self) -> None:
            closed.append(self.name)

    with Store(tmp_path / "d.db") as store:
        mine = Kept(name="mine", image="blender")
        await launch(blender(), store, backend="libvirt", agent="null", desktop=mine).run()
        assert closed == []  # the caller closes its own desktop
        made_here = launch(blender(), store, backend="libvirt", agent="null")
        assert made_here.closes_desktop  # a desktop launch made is closed with the episode


def test_a_desktop_of_another_image_does_not_fit(recorded: list[RecordingDesktop]) -> None:
    gimp_vm = task_desktop("libvirt", load_task(GIMP_TASK))
    assert not fits(gimp_vm, desktop_spec("libvirt", blender()))
    assert fits(gimp_vm, desktop_spec("libvirt", load_task(GIMP_TASK)))


def test_the_tui_pool_reuses_its_vm_of_the_image_only(recorded: list[RecordingDesktop]) -> None:
    pool = DesktopPool("libvirt")
    gimp_entry = pool.new()  # `n` on the Desktops screen: the default image, gimp
    entry, starts = pool.for_task(blender())
    assert entry is not gimp_entry and entry.info().name == "run-blender" and starts
    again, starts = pool.for_task(load_task(GIMP_TASK))
    assert again is gimp_entry and starts  # not running: the episode starts (and stops) it
    gimp_entry.busy = "resetting"
    with pytest.raises(DesktopError, match="busy resetting"):
        pool.for_task(load_task(GIMP_TASK))


def test_a_person_runs_on_a_pass_through_to_the_desktop_they_drive(
    tmp_path: Path, recorded: list[RecordingDesktop]
) -> None:
    with Store(tmp_path / "d.db") as store:
        episode = launch(blender(), store, backend="libvirt", agent=PersonSpec(port=0))
        assert isinstance(episode.desktop, PassThroughDesktop) and episode.closes_desktop
        assert episode.desktop.inner is recorded[0]
        assert episode.person is episode.agent
        # An agent that acts itself runs on the desktop as it is.
        plain = launch(blender(), store, backend="libvirt", agent="null")
        assert plain.person is None and plain.desktop is recorded[1]


def test_a_user_that_reads_the_conversation_is_handed_the_runners(
    tmp_path: Path, recorded: list[RecordingDesktop]
) -> None:
    class Reader(SimulatedUser):
        conversation: Callable[[], Sequence[Message]] | None = None

        def bind_conversation(self, conversation: Callable[[], Sequence[Message]]) -> None:
            self.conversation = conversation

    user = Reader()
    with Store(tmp_path / "d.db") as store:
        episode = launch(blender(), store, backend="libvirt", agent="null", user=user)
    assert isinstance(user, ReadsConversation) and user.conversation is not None
    assert list(user.conversation()) == []  # the runner has not begun
    assert not isinstance(SimulatedUser(), ReadsConversation)
    assert episode.runner.protocol is None


def test_a_bad_agent_spec_fails_before_any_desktop_exists(
    tmp_path: Path, recorded: list[RecordingDesktop]
) -> None:
    with Store(tmp_path / "d.db") as store, pytest.raises(AgentError, match="unknown agent"):
        launch(blender(), store, backend="libvirt", agent="robot")
    with pytest.raises(AgentError, match="person"):
        build_agent(PersonSpec(), blender())
    assert recorded == []
