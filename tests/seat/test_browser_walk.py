"""A participant's whole session in a real headless Chromium, on a real local desktop.

The study has one condition: a scripted agent that asks what the file should be
called and then says DONE; the participant may take over. Chromium opens the address
`run_participant` announces and walks it as a participant would: consent (reached
and pressed by keyboard alone), the brief (Enter on Start), the trial (a click on the
xterm in noVNC's canvas and a typed shell command, then F6 back to the message box and
the answer to the agent's question, then Accept), a questionnaire (first sent with a
required item left empty, which the page refuses naming it, then whole), the end.

The store then holds exactly those steps and messages, in that order (the agent's
ASK, the person's click and typed line, the agent's DONE; the instruction, the
question, the answer), the trial passes on the file the participant made, and the
questionnaire's answers are recorded as given.

With DESKLOOP_SEAT_SHOTS=docs/img the test also writes the pages' screenshots there
(docs/studies.md shows them).
"""

from __future__ import annotations

import asyncio
import base64
import io
import os
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from app.desktops.web.kiosk import Browser
from app.episode.launch import Episode, launch
from app.seat.participant import run_in_view, run_participant
from app.seat.seat import BrowserSeat
from app.store import Store
from app.studies.loader import load_study
from app.studies.plans import plan_in_store
from app.tasks.loader import load_task
from app.tasks.model import Task
from app.users.person import PersonUser
from tests.novnc_browser import headless_chromium, open_url, type_into_canvas
from tests.studies.helpers import write_study
from tests.waiting import eventually
from tests.xterm_task import write_xterm_task

pytestmark = [pytest.mark.desktop, pytest.mark.timeout(600)]

SCRIPT = "- ask: What should the file be called?\n- done\n"
ANSWER = "Call it proof.txt"
FEEDBACK = {
    "id": "after",
    "title": "About this task",
    "items": [
        {"id": "ease", "kind": "likert", "prompt": "The task was easy.", "points": 5,
         "anchors": ["Strongly disagree", "Strongly agree"]},
        {"id": "helper", "kind": "choice", "prompt": "Who did most of the work?",
         "options": ["Me", "The assistant", "Both equally"]},
        {"id": "note", "kind": "text", "prompt": "Anything else?", "required": False},
    ],
}  # fmt: skip


async def js(browser: Browser, expression: str) -> Any:
    return await browser.page.evaluate(expression)


async def heading(browser: Browser) -> str:
    return str(
        await js(
            browser, "document.querySelector('h1') ? document.querySelector('h1').textContent : ''"
        )
    )


async def until_heading(browser: Browser, text: str) -> None:
    async def shown() -> bool:
        return await heading(browser) == text

    await eventually(shown, f"the page headed {text!r}", 120)


async def press(
    browser: Browser, key: str, code: int, *, text: str = "", modifiers: int = 0
) -> None:
    """One key pressed and released on the focused element (CDP's keyDown makes the
    character, so Enter activates a focused button as a person's key would)."""
    base = {"key": key, "code": key, "windowsVirtualKeyCode": code, "modifiers": modifiers}
    down = {**base, "type": "keyDown" if text else "rawKeyDown", "text": text}
    for event in (down, {**base, "type": "keyUp"}):
        await browser.pipe.call("Input.dispatchKeyEvent", event, session_id=browser.page.session_id)


async def tab_to(browser: Browser, label: str) -> None:
    """Tab until the focused element says `label` (a person reaching a button)."""
    for _ in range(10):
        if await js(browser, "document.activeElement.textContent") == label:
            return
        await press(browser, "Tab", 9)
    raise AssertionError(f"Tab never reached {label!r}")


async def screenshot(browser: Browser, name: str) -> None:
    folder = os.environ.get("DESKLOOP_SEAT_SHOTS")
    if not folder:
        return
    shot = await browser.pipe.call(
        "Page.captureScreenshot", {"format": "png"}, session_id=browser.page.session_id
    )
    image = Image.open(io.BytesIO(base64.b64decode(shot["data"])))
    image.thumbnail((960, 600))  # small enough for the docs, large enough to read
    image.save(Path(folder) / f"seat-{name}.png", optimize=True)


SIZES = ((1280, 800), (1920, 1080))
FITS = """(() => {
  const out = [...document.querySelectorAll('button, textarea, input, #screen')]
    .filter(e => !e.hidden && e.offsetParent !== null)
    .map(e => [e.id || e.textContent || e.name, e.getBoundingClientRect()])
    .filter(([, r]) => r.left < 0 || r.right > innerWidth || r.top < 0 || r.bottom > innerHeight)
    .map(([name]) => name);
  if (document.documentElement.scrollWidth > innerWidth) out.push('the page scrolls sideways');
  return out;
})()"""


async def size(browser: Browser, width: int, height: int) -> None:
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
    await browser.pipe.call(
        "Emulation.setDeviceMetricsOverride", metrics, session_id=browser.page.session_id
    )


async def fits_both_sizes(browser: Browser) -> None:
    """Every control of the page is on screen, with no sideways scrolling, at both
    sizes the view is made for (a questionnaire may scroll down, never sideways)."""
    for width, height in SIZES:
        await size(browser, width, height)
        outside = await js(browser, FITS)
        if await heading(browser) != "About this task":
            assert outside == [], f"at {width}×{height}: {outside}"
        else:
            assert "the page scrolls sideways" not in outside, f"at {width}×{height}"
    await size(browser, *SIZES[0])


async def click_desktop(browser: Browser, x: int, y: int) -> None:
    """A left click at desktop pixel (x, y) of noVNC's canvas, which the page scales
    to fit (desktop pixels → page pixels by the canvas's shown size)."""
    rect = await js(
        browser,
        "(() => { const c = document.querySelector('#screen canvas');"
        " const r = c.getBoundingClientRect();"
        " return {x: r.x, y: r.y, sx: r.width / c.width, sy: r.height / c.height}; })()",
    )
    at = {"x": rect["x"] + x * rect["sx"], "y": rect["y"] + y * rect["sy"], "button": "left",
          "clickCount": 1}  # fmt: skip
    for kind in ("mousePressed", "mouseReleased"):
        await browser.pipe.call(
            "Input.dispatchMouseEvent", {"type": kind, **at}, session_id=browser.page.session_id
        )


async def test_a_participant_walks_consent_a_trial_and_a_questionnaire_in_chromium(
    tmp_path: Path,
) -> None:
    task = load_task(write_xterm_task(tmp_path, steps=20, seconds=600))
    script = tmp_path / "asks.yaml"
    script.write_text(SCRIPT)
    study = load_study(
        write_study(
            tmp_path / "studies",
            conditions=[
                {"id": "helped", "agent": f"scripted:{script}", "policy": {"may_take_over": True}}
            ],
            tasks={"blocks": [[task.id]]},
            design={"seed": 1},
            questionnaires={"post_trial": [FEEDBACK]},
        )
    )
    seat = BrowserSeat()
    addresses: list[str] = []
    with Store(tmp_path / "db.sqlite") as store:
        plan, _ = plan_in_store(store, study, 1)
        session = asyncio.ensure_future(
            run_participant(
                store, study, "P01", tasks={task.id: task}, backend="local", seed=plan.seed,
                announce=addresses.append, seat=seat,
            )
        )  # fmt: skip
        try:
            await eventually(lambda: bool(addresses) or session.done(), "the view's address")
            async with headless_chromium(tmp_path) as browser:
                await size(browser, *SIZES[0])
                await open_url(browser, addresses[0])
                await until_heading(browser, "Consent")
                # The token went into a cookie; the address bar holds none.
                assert await js(browser, "location.href") == addresses[0].split("?")[0]
                await fits_both_sizes(browser)
                await screenshot(browser, "consent")
                await tab_to(browser, "I agree")
                await press(browser, "Enter", 13, text="\r")

                await until_heading(browser, task.title)  # the brief; Start has the focus
                assert await js(browser, "document.activeElement.textContent") == "Start"
                await press(browser, "Enter", 13, text="\r")

                async def asked_and_connected() -> bool:
                    said = await js(
                        browser,
                        "[document.getElementById('status')?.textContent,"
                        " document.getElementById('desk-status')?.textContent]",
                    )
                    return "question" in str(said[0]) and str(said[1]).startswith("Connected")

                await eventually(asked_and_connected, "the agent's question and the desktop", 180)
                talk = await js(browser, "document.getElementById('talk').textContent")
                assert "What should the file be called?" in talk
                await click_desktop(browser, 120, 80)  # the xterm, at the top left
                await type_into_canvas(browser, "touch proof.txt\n")
                trial = seat.trial
                assert trial is not None
                guest = trial.episode.desktop.guest
                await eventually(
                    lambda: guest.exists(f"{guest.home}/proof.txt"),
                    "the file the participant made in noVNC",
                    60,
                )
                await press(browser, "F6", 117)  # the keyboard leaves the desktop
                assert await js(browser, "document.activeElement.id") == "message"
                await browser.pipe.call(
                    "Input.insertText", {"text": ANSWER}, session_id=browser.page.session_id
                )
                await screenshot(browser, "trial")
                await press(browser, "Enter", 13, text="\r", modifiers=2)  # Ctrl+Enter sends

                async def review() -> bool:
                    return bool(await js(browser, "!document.getElementById('accept').hidden"))

                await eventually(review, "the agent's DONE for review", 60)
                await fits_both_sizes(browser)  # after the clicks on the canvas: it rescales
                await js(browser, "document.getElementById('accept').click()")

                await until_heading(browser, "About this task")
                await js(
                    browser, "document.querySelector('input[name=item-ease][value=\"4\"]').click()"
                )
                await js(browser, "document.querySelector('form button[type=submit]').click()")

                async def refused() -> bool:
                    said = await js(
                        browser, "document.getElementById('item-helper-problem').textContent"
                    )
                    return "required" in str(said)

                await eventually(refused, "the page naming the empty required item")
                await fits_both_sizes(browser)
                await screenshot(browser, "questionnaire")
                await js(
                    browser,
                    "document.querySelector("
                    "'input[name=item-helper][value=\"Both equally\"]').click()",
                )
                await js(browser, "document.getElementById('item-note').value = 'It asked first.'")
                await js(browser, "document.querySelector('form button[type=submit]').click()")
                await until_heading(browser, "Thank you")
                report = await asyncio.wait_for(session, 60)
        finally:
            if not session.done():
                session.cancel()
                await asyncio.gather(session, return_exceptions=True)

        assert report.consented and report.trials_run == [0] and report.questionnaires == 1
        (trial_record,) = store.studies.trials(study.id, "P01")
        assert trial_record.done
        episode_id = trial_record.tries[-1].episode_id
        assert episode_id is not None
        steps = store.steps(episode_id)
        messages = store.messages(episode_id)
        responses = store.studies.responses(study.id)
        episode = store.get_episode(episode_id)

    assert [(s.actor, s.action["kind"]) for s in steps] == [
        ("agent", "ask"),
        ("person", "click"),
        ("person", "type"),
        ("agent", "done"),
    ]
    # The page scales the desktop to fit: a page pixel is 1.5 desktop pixels across,
    # so the click lands on (120, 80) give or take the one noVNC rounds to.
    assert abs(steps[1].action["x"] - 120) <= 1 and abs(steps[1].action["y"] - 80) <= 1
    assert steps[2].action["text"] == "touch proof.txt\n"
    assert [(m.role, m.kind, m.source, m.text) for m in messages] == [
        ("user", "instruction", "task", task.instruction),
        ("agent", "question", "agent", "What should the file be called?"),
        ("user", "answer", "person", ANSWER),
        ("agent", "done", "agent", messages[3].text),
    ]
    assert episode.passed is True  # the participant's file
    given = {(r.instrument, r.item): r.value for r in responses}
    assert given == {
        ("after", "ease"): 4,
        ("after", "helper"): "Both equally",
        ("after", "note"): "It asked first.",
    }


async def test_a_participant_who_is_the_agent_works_the_desktop_and_says_done(
    tmp_path: Path,
) -> None:
    """The human baseline: the participant alone on the desktop (no assistant, so no
    message box to send), through the person agent's own recording proxy; Done ends
    the trial, and their click, typed line and DONE are the episode's steps."""
    task = load_task(write_xterm_task(tmp_path, steps=20, seconds=600))
    study = load_study(
        write_study(
            tmp_path / "studies",
            conditions=[{"id": "alone", "participant": "agent"}],
            tasks={"blocks": [[task.id]]},
            design={"seed": 1},
        )
    )
    seat = BrowserSeat()
    addresses: list[str] = []
    with Store(tmp_path / "db.sqlite") as store:
        plan, _ = plan_in_store(store, study, 1)
        session = asyncio.ensure_future(
            run_participant(
                store, study, "P01", tasks={task.id: task}, backend="local", seed=plan.seed,
                announce=addresses.append, seat=seat,
            )
        )  # fmt: skip
        try:
            await eventually(lambda: bool(addresses) or session.done(), "the view's address")
            async with headless_chromium(tmp_path) as browser:
                await size(browser, *SIZES[0])
                await open_url(browser, addresses[0])
                await until_heading(browser, "Consent")
                await js(browser, "[...document.querySelectorAll('button')][0].click()")
                await until_heading(browser, task.title)
                await press(browser, "Enter", 13, text="\r")

                async def connected() -> bool:
                    said = await js(browser, "document.getElementById('desk-status')?.textContent")
                    return str(said).startswith("Connected: you may use")

                await eventually(connected, "the desktop, to use", 180)
                assert await js(browser, "document.getElementById('send').hidden") is True
                await click_desktop(browser, 120, 80)
                await type_into_canvas(browser, "touch proof.txt\n")
                trial = seat.trial
                assert trial is not None
                guest = trial.episode.desktop.guest
                await eventually(
                    lambda: guest.exists(f"{guest.home}/proof.txt"), "the participant's file", 60
                )
                await js(browser, "document.getElementById('done').click()")
                await until_heading(browser, "Thank you")
                report = await asyncio.wait_for(session, 60)
        finally:
            if not session.done():
                session.cancel()
                await asyncio.gather(session, return_exceptions=True)
        assert report.trials_run == [0]
        (trial_record,) = store.studies.trials(study.id, "P01")
        episode_id = trial_record.tries[-1].episode_id
        assert episode_id is not None
        steps = store.steps(episode_id)
        episode = store.get_episode(episode_id)
    assert [s.action["kind"] for s in steps] == ["click", "type", "done"]
    assert steps[1].action["text"] == "touch proof.txt\n"
    assert episode.agent == "person" and episode.passed is True


async def test_a_single_episode_with_a_person_in_the_browser(tmp_path: Path) -> None:
    """`deskloop run TASK --user person --view browser`'s path (run_in_view): no
    consent and no questionnaire; the brief, the trial (the agent's question answered
    in the page, its DONE accepted), the end page; the episode records the person's
    answer as theirs."""
    task = load_task(write_xterm_task(tmp_path, steps=20, seconds=600))
    script = tmp_path / "asks.yaml"
    script.write_text(SCRIPT)
    addresses: list[str] = []
    with Store(tmp_path / "db.sqlite") as store:

        def launch_episode(task: Task, user: PersonUser) -> Episode:
            return launch(task, store, backend="local", agent=f"scripted:{script}", user=user)

        run = asyncio.ensure_future(run_in_view([task], launch_episode, announce=addresses.append))
        try:
            await eventually(lambda: bool(addresses) or run.done(), "the view's address")
            async with headless_chromium(tmp_path) as browser:
                await size(browser, *SIZES[1])
                await open_url(browser, addresses[0])
                await until_heading(browser, task.title)
                await press(browser, "Enter", 13, text="\r")

                async def asked() -> bool:
                    said = await js(browser, "document.getElementById('status')?.textContent")
                    return "question" in str(said)

                await eventually(asked, "the agent's question", 180)
                await js(browser, "document.getElementById('message').focus()")
                await browser.pipe.call(
                    "Input.insertText", {"text": ANSWER}, session_id=browser.page.session_id
                )
                await js(browser, "document.getElementById('send').click()")

                async def review() -> bool:
                    return bool(await js(browser, "!document.getElementById('accept').hidden"))

                await eventually(review, "the agent's DONE for review", 60)
                await js(browser, "document.getElementById('accept').click()")
                await until_heading(browser, "Thank you")
                (result,) = await asyncio.wait_for(run, 60)
        finally:
            if not run.done():
                run.cancel()
                await asyncio.gather(run, return_exceptions=True)
        messages = store.messages(result.episode_id)
        episode = store.get_episode(result.episode_id)
    assert [(m.kind, m.source) for m in messages] == [
        ("instruction", "task"),
        ("question", "agent"),
        ("answer", "person"),
        ("done", "agent"),
    ]
    assert messages[2].text == ANSWER and episode.user_mode == "person"
