"""Shared by the UI tests: a recorded database and condition waits."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from textual.app import App
from textual.pilot import Pilot

from app.core.vocabulary import UserMode
from app.desktops.inventory import BackendListing, SavedState, VmListing
from app.desktops.libvirt import DOMAIN_PREFIX
from app.rfb.client import VncEndpoint
from app.store import Store, frame_png
from tests.check_outcomes import outcome
from tests.waiting import eventually

T0 = datetime(2026, 1, 15, 9, 0, tzinfo=UTC)


async def wait_until(
    pilot: Pilot[None], condition: Callable[[], bool], timeout: float, what: str
) -> None:
    """Let the app run until `condition` holds (tests/waiting.py's `eventually`, pausing
    with the pilot so the app processes its messages)."""
    await eventually(condition, what, timeout, pause=pilot.pause)


async def open_start_dialog(pilot: Pilot[None]) -> Any:
    """From the Tasks screen: `s` on the selected task; returns the start dialog."""
    from app.ui.screens.tasks import StartEpisodeScreen, TasksScreen

    app = pilot.app
    screen = app.screen
    assert isinstance(screen, TasksScreen)
    await wait_until(pilot, lambda: screen.selected is not None, 5, "a selected task")
    await pilot.press("s")
    await wait_until(
        pilot, lambda: isinstance(app.screen, StartEpisodeScreen), 5, "the start dialog"
    )
    return app.screen


async def start_default_episode(pilot: Pilot[None]) -> Any:
    """From the Tasks screen: start the selected task with the dialog's defaults;
    returns the Live screen it opens."""
    from app.ui.screens.live import LiveScreen

    await open_start_dialog(pilot)
    await pilot.press("enter")
    app = pilot.app
    await wait_until(pilot, lambda: isinstance(app.screen, LiveScreen), 10, "Live screen")
    return app.screen


def coloured_frame_png(color: tuple[int, int, int], size: tuple[int, int] = (160, 100)) -> bytes:
    pixels = np.zeros((size[1], size[0], 3), dtype=np.uint8)
    pixels[:, :] = color
    pixels[10:30, 10:60] = (255, 255, 255)
    return frame_png(pixels)


def record_episode(
    store: Store,
    *,
    task_id: str,
    app: str = "gimp",
    level: str = "L1",
    interactive: bool = False,
    user_mode: UserMode = "simulated",
    passed: bool | None = True,
    score: float | None = 1.0,
    asks: int = 0,
    minute: int = 0,
) -> int:
    """A finished episode with two steps, its messages, frames and checks, at fixed times."""
    start = T0 + timedelta(minutes=minute)
    episode = store.start_episode(
        task_id=task_id,
        task_path=f"tasks/{app}/{task_id}.yaml",
        task_sha256="0" * 64,
        app=app,
        level=level,
        interactive=interactive,
        agent="reference",
        user_mode=user_mode,
        backend="local",
        started_at=start,
    )
    store.record_message(
        episode,
        role="user",
        kind="instruction",
        text=f"Do {task_id}.",
        step=0,
        source="task",
        created_at=start,
    )
    actions: list[tuple[dict[str, Any], str, str]] = [
        (
            {"kind": "click", "x": 40, "y": 20, "button": "left", "count": 1},
            "click",
            "click(40, 20)",
        ),
        ({"kind": "type", "text": "hello"}, "type", "type('hello')"),
    ]
    for idx, (action, kind, description) in enumerate(actions):
        frame = store.save_frame(episode, idx, coloured_frame_png((20 * idx, 60, 120)))
        store.record_step(
            episode,
            idx=idx,
            action=action,
            kind=kind,
            description=description,
            started_at=start + timedelta(seconds=idx + 1),
            agent_seconds=0.1,
            act_seconds=0.05,
            settle_seconds=0.2,
            frame=frame,
            phase_index=None,
            active_message_id=None,
        )
    for n in range(asks):
        store.record_message(
            episode,
            role="agent",
            kind="question",
            text="Which size?",
            step=1,
            source="agent",
            created_at=start + timedelta(seconds=2),
        )
        store.record_message(
            episode,
            role="user",
            kind="answer",
            text="200 pixels.",
            step=1,
            source="person" if user_mode == "person" else "simulated",
            created_at=start + timedelta(seconds=3 + n),
        )
    final = store.save_frame(episode, "final", coloured_frame_png((200, 60, 40)))
    if passed is not None and score is not None:
        store.record_score(
            episode,
            passed=passed,
            score=score,
            checks=[
                outcome(
                    "evaluate.all[0]", passed=passed, score=score, evidence="~/out.png: 1234 bytes"
                )
            ],
        )
    store.finish_episode(
        episode,
        status="finished" if passed is not None else "error",
        end_reason="done" if passed is not None else "error",
        error=None if passed is not None else "agent endpoint unavailable",
        steps=2,
        final_frame=final,
        ended_at=start + timedelta(seconds=30),
    )
    return episode


def fixture_db(path: Path) -> Path:
    """A database with a few episodes of different apps, levels, users and results."""
    with Store(path) as store:
        record_episode(store, task_id="gimp-flip-export", minute=0)
        record_episode(store, task_id="gimp-flip-export", passed=False, score=0.4, minute=1)
        record_episode(
            store,
            task_id="gimp-badge-interactive",
            level="L2",
            interactive=True,
            user_mode="person",
            asks=1,
            minute=2,
        )
        record_episode(
            store,
            task_id="blender-add-cube",
            app="blender",
            passed=None,
            score=None,
            minute=3,
        )
    return path


STANDARD = """\
id: alpha-touch
app: gimp
level: L1
title: Touch a file
instruction: Create ~/a.txt.
setup:
  - launch: [xterm]
  - wait_window: {class: XTerm, timeout: 30}
evaluate: {check: file_exists, path: ~/a.txt}
"""

INTERACTIVE = """\
id: beta-steps
app: kdenlive
level: L2
title: Two files, the second asked for later
instruction: Create ~/b.txt.
phases:
  - message: Also create ~/c.txt.
    trigger: {any: [agent_done, {step_count: 3}]}
evaluate:
  all:
    - {check: file_exists, path: ~/b.txt}
    - {check: file_exists, path: ~/c.txt, weight: 2}
"""


def write_tasks(root: Path, broken: bool = False) -> Path:
    (root / "gimp").mkdir(parents=True, exist_ok=True)
    (root / "kdenlive").mkdir(parents=True, exist_ok=True)
    (root / "gimp" / "alpha-touch.yaml").write_text(STANDARD)
    (root / "kdenlive" / "beta-steps.yaml").write_text(INTERACTIVE)
    if broken:
        (root / "gimp" / "gamma-broken.yaml").write_text(
            textwrap.dedent(STANDARD).replace("alpha-touch", "gamma-broken").replace("L1", "L9")
        )
    return root


# -- libvirt desktops made outside the session (a fixed listing) ---------------------


def vm(name: str, **changes: object) -> VmListing:
    fields: dict[str, object] = {
        "name": name,
        "domain": DOMAIN_PREFIX + name,
        "state": "shut off",
        "image": "gimp",
        "width": 1280,
        "height": 800,
        "vnc": None,
        "states": (),
        "locked_by": None,
        "dir": Path("/cache/vms") / name,
    }
    fields.update(changes)
    return VmListing(**fields)  # type: ignore[arg-type]


ALPHA = vm(
    "alpha",
    state="running",
    vnc=VncEndpoint("127.0.0.1", 5999, "pw4alpha"),
    states=(
        SavedState("tui-20260115-090000", 1_768_467_600.0),
        SavedState("boot", 1_768_400_000.0),
    ),
)
BETA = vm("beta", image="blender", width=1920, height=1080, locked_by=4242)
GAMMA = vm("gamma", image="kdenlive")
LISTING = BackendListing("libvirt", "qemu:///system", (ALPHA, BETA, GAMMA))


def screen_text(app: App[None]) -> str:
    """What the terminal shows now, as plain text (one line per row)."""
    strips = app.screen._compositor.render_strips()
    return "\n".join(strip.text for strip in strips)
