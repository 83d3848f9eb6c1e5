"""The person's one way in (app.rfb.person) on a real Xvnc with a key-logging window
(xev): a burst of 40 keys with doubled letters and Alt chords, handed over one action
per key as the TUI's take-over does, reaches the desktop in order with its modifiers,
and is recorded in the same order, typed runs merged into one `type` each."""

from __future__ import annotations

import asyncio
import re

import pytest

from app.core.actions import Action, Click, GuiAction, Key, Type
from app.desktops.local.desktop import LocalDesktop
from app.desktops.xwindows import wait_window
from app.rfb.person import PersonInput
from tests.waiting import eventually

pytestmark = pytest.mark.desktop

# What a fast typist gives the TUI, one key event at a time (40 keys).
BURST: list[GuiAction] = [
    *(Type(c) for c in "aabbcc"),
    Key("alt+f"),
    *(Type(c) for c in "photo-flipped.png"),
    Key("alt+b"),
    *(Type(c) for c in "oo-kk--zz..ss.."),
]
_NAMES = {"-": "minus", ".": "period"}


def _pressed(log: str) -> list[str]:
    """The keysym names of xev's KeyPress events, in order."""
    return re.findall(r"KeyPress event,.*?keysym 0x[0-9a-f]+, (\w+)\)", log, flags=re.S)


async def test_a_burst_of_keys_arrives_and_is_recorded_in_order() -> None:
    recorded: list[Action] = []
    async with LocalDesktop() as desktop:
        guest = desktop.guest
        log = f"{guest.home}/keys.log"
        # Line-buffered, so each event is in the file once xev has handled it.
        await guest.launch(
            [
                "sh",
                "-c",
                f"exec stdbuf -oL xev -event keyboard -event focus -geometry 600x400+0+0 > {log}",
            ]
        )
        await wait_window(guest, name="Event Tester", timeout=90)
        endpoint = desktop.info().vnc
        assert endpoint is not None
        person = PersonInput(endpoint, recorded.append)
        await person.start()
        try:
            person.submit(Click(300, 200))  # the pointer in xev's window gives it the keys

            async def focused() -> bool:
                return "FocusIn event" in (await guest.run(["cat", log])).stdout_text()

            # Keys sent before the window has the focus go elsewhere (under load the
            # window manager hands it over late): the burst starts once it has.
            await eventually(focused, "xev's window to take the focus")
            for action in BURST:
                person.submit(action)
            done = asyncio.Event()
            person.after_input(done.set)
            await asyncio.wait_for(done.wait(), 60)
            assert person.errors == []
        finally:
            await person.close()

        expected = ["a", "a", "b", "b", "c", "c", "Alt_L", "f"]
        expected += [_NAMES.get(c, c) for c in "photo-flipped.png"] + ["Alt_L", "b"]
        expected += [_NAMES.get(c, c) for c in "oo-kk--zz..ss.."]

        async def all_pressed() -> bool:
            result = await guest.run(["cat", log])
            return len(_pressed(result.stdout_text())) >= len(expected)

        await eventually(all_pressed, "xev to log every key")
        text = (await guest.run(["cat", log])).stdout_text()
    assert _pressed(text) == expected
    assert recorded == [
        Click(300, 200),
        Type("aabbcc"),
        Key("alt+f"),
        Type("photo-flipped.png"),
        Key("alt+b"),
        Type("oo-kk--zz..ss.."),
    ]
