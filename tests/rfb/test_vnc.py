"""The asyncio RFB client: against a scripted RFB peer (no X) and against a real Xvnc."""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import shutil
import socket
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator

import numpy as np
import pytest

from app.core.actions import Click, Drag, Key, Move, Scroll, Type, Wait
from app.core.errors import ActionError, VNCError
from app.core.keys import parse_combo
from app.desktops.local.bare_xvnc import BareXvnc, bare_xvnc
from app.rfb.client import VNCClient, VNCSession, connect
from app.rfb.wire import vnc_auth_response
from tests.rfb_server import (
    EXPECTED_PIXEL_FORMAT,
    KeyEvent,
    PointerEvent,
    RFBTestServer,
    UpdateRequest,
)

CTRL, SHIFT = 0xFFE3, 0xFFE1

# The scripted server checks passwords with vncdotool's DES code (TripleDES, deprecated).
pytestmark = pytest.mark.filterwarnings("ignore:TripleDES has been moved")


def _random_rgb(h: int, w: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


async def _poll(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.005)


@pytest.fixture
async def server() -> AsyncIterator[RFBTestServer]:
    srv = RFBTestServer(64, 48)
    srv.fb[:] = _random_rgb(48, 64, seed=1)
    await srv.start()
    yield srv
    await srv.stop()


@pytest.fixture
async def client(server: RFBTestServer) -> AsyncIterator[VNCClient]:
    c = await connect("127.0.0.1", server.port, server.password, timeout=5)
    yield c
    await c.close()


# ---------------------------------------------------------------- handshake


async def test_handshake_negotiates_format_encodings_and_shared(
    server: RFBTestServer, client: VNCClient
) -> None:
    assert (client.width, client.height, client.name) == (64, 48, "test-desktop")
    await server.wait_for(lambda _: server.pixel_format is not None and bool(server.encodings))
    assert server.pixel_format == EXPECTED_PIXEL_FORMAT
    assert server.encodings[:2] == [0, 1] and -223 in server.encodings
    assert server.shared is True


def test_auth_response_matches_a_second_des_implementation() -> None:
    from vncdotool.rfb import _vnc_des, des_encrypt

    challenge = bytes(range(100, 116))
    for password in ("s3cret", "a", "longerthaneight", ""):
        expected = des_encrypt(_vnc_des(password[:8]), challenge)
        assert vnc_auth_response(password, challenge) == expected


async def test_wrong_password_is_rejected_with_the_server_reason(server: RFBTestServer) -> None:
    with pytest.raises(VNCError) as err:
        await connect("127.0.0.1", server.port, "nope", timeout=5)
    assert "authentication failed" in str(err.value)
    assert "wrong password" in str(err.value)
    assert f"127.0.0.1:{server.port}" in str(err.value)


async def test_refused_connection_reports_the_reason() -> None:
    srv = RFBTestServer(refuse_reason="too many clients")
    await srv.start()
    try:
        with pytest.raises(VNCError, match="refused the connection: too many clients"):
            await connect("127.0.0.1", srv.port, "x", timeout=5)
    finally:
        await srv.stop()


async def test_security_none_is_accepted_when_offered_alone() -> None:
    srv = RFBTestServer(security_types=(1,))
    srv.fb[:] = 7
    await srv.start()
    try:
        c = await connect("127.0.0.1", srv.port, "", timeout=5)
        frame = await c.frame()
        assert (frame.pixels == 7).all()
        await c.close()
    finally:
        await srv.stop()


async def test_unsupported_security_types_are_named() -> None:
    srv = RFBTestServer(security_types=(16, 19))
    await srv.start()
    try:
        with pytest.raises(VNCError, match=r"security types \[16, 19\]"):
            await connect("127.0.0.1", srv.port, "x", timeout=5)
    finally:
        await srv.stop()


async def test_connection_refused_on_a_closed_port() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(VNCError, match="refused"):
        await connect("127.0.0.1", port, "x", timeout=5)


async def test_silent_server_times_out() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # never greets; returns when the client gives up
        writer.close()

    srv = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    try:
        start = time.monotonic()
        with pytest.raises(VNCError, match=r"timed out after 0\.3 s"):
            await connect("127.0.0.1", port, "x", timeout=0.3)
        assert time.monotonic() - start < 2
    finally:
        srv.close()
        await srv.wait_closed()


# ---------------------------------------------------------------- frames


async def test_frame_is_pixel_exact(server: RFBTestServer, client: VNCClient) -> None:
    frame = await client.frame()
    assert frame.pixels.shape == (48, 64, 3)
    assert frame.pixels.dtype == np.uint8
    np.testing.assert_array_equal(frame.pixels, server.fb)


async def test_frame_reflects_changes_made_before_the_call(
    server: RFBTestServer, client: VNCClient
) -> None:
    await client.frame()
    server.paint(0, 0, _random_rgb(48, 64, seed=2))  # queued, never asked for incrementally
    frame = await client.frame()
    np.testing.assert_array_equal(frame.pixels, server.fb)


async def test_frame_with_an_incremental_request_outstanding(
    server: RFBTestServer, client: VNCClient
) -> None:
    # A settle that saw nothing leaves an incremental request pending at the server:
    # the next change is answered to that request (a partial update), and frame()
    # must still wait for a whole screen.
    assert not (await client.settle(change_wait=0.05)).changed
    server.paint(10, 10, _random_rgb(8, 8, seed=3))
    frame = await client.frame()
    np.testing.assert_array_equal(frame.pixels, server.fb)
    requests = [e for e in server.events if isinstance(e, UpdateRequest)]
    assert requests[-1].incremental is False
    assert (requests[-1].w, requests[-1].h) == (64, 48)


async def test_incremental_raw_and_overlapping_copyrect(
    server: RFBTestServer, client: VNCClient
) -> None:
    await client.frame()
    server.paint(5, 7, _random_rgb(20, 30, seed=4))
    result = await client.settle(timeout=2)
    assert result.changed
    np.testing.assert_array_equal(client.current_frame().pixels, server.fb)

    # Source and destination overlap: the copy must read the old pixels.
    server.copy(5, 7, 30, 20, 12, 10)
    assert (await client.settle(timeout=2)).changed
    np.testing.assert_array_equal(client.current_frame().pixels, server.fb)


async def test_settle_ignores_tiny_and_unchanged_rects(
    server: RFBTestServer, client: VNCClient
) -> None:
    await client.frame()
    # An 8x8 box changes: 64 pixels, not more than min_area.
    server.paint(0, 0, 255 - server.fb[0:8, 0:8])
    assert not (await client.settle(change_wait=0.3)).changed
    # A large rect that repaints exactly what is already there.
    server.paint(0, 16, server.fb[16:48, 0:64].copy())
    assert not (await client.settle(change_wait=0.3)).changed
    np.testing.assert_array_equal(client.current_frame().pixels, server.fb)
    # A 10x10 box that really changes.
    server.paint(30, 30, 255 - server.fb[30:40, 30:40])
    result = await client.settle(change_wait=0.3, quiet=0.1)
    assert result.changed and result.settled
    assert 0.1 <= result.seconds < 1.0
    # Reported once: a second settle sees a quiet screen.
    assert not (await client.settle(change_wait=0.2)).changed


async def test_settle_gives_up_at_timeout_on_a_busy_screen(
    server: RFBTestServer, client: VNCClient
) -> None:
    await client.frame()
    stop = asyncio.Event()

    async def animate() -> None:
        seed = 10
        while not stop.is_set():
            seed += 1
            server.paint(0, 0, _random_rgb(16, 16, seed))
            await asyncio.sleep(0.02)

    task = asyncio.create_task(animate())
    try:
        result = await client.settle(timeout=0.5, quiet=0.2, change_wait=0.3)
    finally:
        stop.set()
        await task
    assert result.changed and not result.settled
    assert 0.5 <= result.seconds < 0.8


async def test_desktop_size_reallocates(server: RFBTestServer, client: VNCClient) -> None:
    await client.frame()
    server.resize(80, 40, fill=(10, 200, 30))
    assert (await client.settle(timeout=2)).changed
    assert (client.width, client.height) == (80, 40)
    np.testing.assert_array_equal(client.current_frame().pixels, server.fb)
    frame = await client.frame()
    assert frame.pixels.shape == (40, 80, 3)
    assert (frame.pixels == (10, 200, 30)).all()


async def test_bell_and_cut_text(server: RFBTestServer, client: VNCClient) -> None:
    server.bell()
    server.cut_text("copied text")
    await _poll(lambda: client.bells == 1 and client.cut_text == "copied text")
    assert not client.closed


async def test_unknown_server_message_closes_with_protocol_error(
    server: RFBTestServer, client: VNCClient
) -> None:
    server.send_raw_message(b"\x63")
    await _poll(lambda: client.closed)
    with pytest.raises(VNCError, match="unknown server message type 99"):
        await client.frame()


async def test_drop_fails_pending_waiters_and_marks_closed(
    server: RFBTestServer, client: VNCClient
) -> None:
    await client.frame()
    waiter = asyncio.create_task(client.settle(timeout=10, change_wait=10))
    await server.wait_for(lambda ev: isinstance(ev[-1], UpdateRequest) and ev[-1].incremental)
    server.drop()
    with pytest.raises(VNCError, match="closed the connection"):
        await asyncio.wait_for(waiter, 2)
    assert client.closed
    with pytest.raises(VNCError):
        await client.perform(Move(1, 1))


# ---------------------------------------------------------------- input


async def test_key_combo_presses_in_order_and_releases_in_reverse(
    server: RFBTestServer, client: VNCClient
) -> None:
    await client.key_combo([CTRL, SHIFT, ord("s")])
    events = await server.wait_for(lambda ev: len(server.input_events()) >= 6)
    del events
    assert server.input_events() == [
        KeyEvent(True, CTRL),
        KeyEvent(True, SHIFT),
        KeyEvent(True, ord("s")),
        KeyEvent(False, ord("s")),
        KeyEvent(False, SHIFT),
        KeyEvent(False, CTRL),
    ]


async def test_type_text_sends_one_press_release_per_character(
    server: RFBTestServer, client: VNCClient
) -> None:
    await client.perform(Type("aB!\né"))
    await server.wait_for(lambda _: len(server.input_events()) >= 10)
    expected: list[KeyEvent] = []
    for sym in (0x61, 0x42, 0x21, 0xFF0D, 0xE9):
        expected += [KeyEvent(True, sym), KeyEvent(False, sym)]
    assert server.input_events() == expected


async def test_explicit_shift_and_paced_typing_for_qemu(server: RFBTestServer) -> None:
    """QEMU's VNC server needs Shift sent around shifted characters and typing paced;
    a session configured so keeps both across a reconnect."""
    session = VNCSession(
        "127.0.0.1", server.port, server.password, explicit_shift=True, type_delay=0.02
    )
    try:
        await session.perform(Type("a~B"))
        server.drop()
        await _poll(lambda: session.client is not None and session.client.closed)
        t0 = time.monotonic()
        await session.perform(Type("_x"))
        paced = time.monotonic() - t0
        await server.wait_for(lambda _: len(server.input_events()) >= 16)
    finally:
        await session.close()
    shift = parse_combo("shift")[0]

    def plain(sym: int) -> list[KeyEvent]:
        return [KeyEvent(True, sym), KeyEvent(False, sym)]

    def shifted(sym: int) -> list[KeyEvent]:
        return [KeyEvent(True, shift), *plain(sym), KeyEvent(False, shift)]

    a, tilde, big_b, underscore, x = 0x61, 0x7E, 0x42, 0x5F, 0x78
    expected = plain(a) + shifted(tilde) + shifted(big_b) + shifted(underscore) + plain(x)
    assert server.input_events() == expected
    assert paced >= 2 * 0.02  # one pause after each character


async def test_key_action_uses_the_parsed_combo(server: RFBTestServer, client: VNCClient) -> None:
    await client.perform(Key("ctrl+shift+e"))
    await server.wait_for(lambda _: len(server.input_events()) >= 6)
    syms = parse_combo("ctrl+shift+e")
    presses = [e.keysym for e in server.input_events() if isinstance(e, KeyEvent) and e.down]
    releases = [e.keysym for e in server.input_events() if isinstance(e, KeyEvent) and not e.down]
    assert presses == syms and releases == syms[::-1]


async def test_double_right_click(server: RFBTestServer, client: VNCClient) -> None:
    await client.perform(Click(10, 12, button="right", count=2))
    await server.wait_for(lambda _: len(server.input_events()) >= 5)
    assert server.input_events() == [
        PointerEvent(0, 10, 12),
        PointerEvent(4, 10, 12),
        PointerEvent(0, 10, 12),
        PointerEvent(4, 10, 12),
        PointerEvent(0, 10, 12),
    ]


async def test_drag_moves_through_intermediate_points(
    server: RFBTestServer, client: VNCClient
) -> None:
    await client.perform(Drag(2, 3, 62, 43))
    await server.wait_for(
        lambda _: (
            bool(server.input_events()) and server.input_events()[-1] == PointerEvent(0, 62, 43)
        )
    )
    events = server.input_events()
    assert events[:2] == [PointerEvent(0, 2, 3), PointerEvent(1, 2, 3)]
    middle = events[2:-1]
    assert len(middle) >= 2
    assert all(isinstance(e, PointerEvent) and e.mask == 1 for e in middle)
    xs = [e.x for e in middle if isinstance(e, PointerEvent)]
    assert xs == sorted(xs) and xs[-1] == 62
    for e in middle:
        assert isinstance(e, PointerEvent)
        # On the segment from (2, 3) to (62, 43): y - 3 = (x - 2) * 40 / 60.
        assert abs((e.y - 3) * 60 - (e.x - 2) * 40) <= 60


@pytest.mark.parametrize(("dy", "mask"), [(3, 16), (-2, 8)])
async def test_scroll_presses_the_wheel_buttons(
    server: RFBTestServer, client: VNCClient, dy: int, mask: int
) -> None:
    await client.perform(Scroll(30, 20, dy))
    count = 1 + 2 * abs(dy)
    await server.wait_for(lambda _: len(server.input_events()) >= count)
    assert server.input_events() == [
        PointerEvent(0, 30, 20),
        *[PointerEvent(m, 30, 20) for _ in range(abs(dy)) for m in (mask, 0)],
    ]


@pytest.mark.parametrize(
    "action",
    [Click(64, 0), Move(0, 48), Drag(0, 0, -1, 5), Scroll(100, 100, 1)],
)
async def test_out_of_screen_actions_are_refused_before_sending(
    server: RFBTestServer, client: VNCClient, action: Click | Move | Drag | Scroll
) -> None:
    with pytest.raises(ActionError, match="outside the 64x48 screen") as err:
        await client.perform(action)
    assert "(" in str(err.value)
    await client.perform(Move(1, 1))
    await server.wait_for(lambda _: bool(server.input_events()))
    assert server.input_events() == [PointerEvent(0, 1, 1)]


async def test_wait_sleeps(client: VNCClient) -> None:
    start = time.monotonic()
    await client.perform(Wait(0.2))
    assert time.monotonic() - start >= 0.2


# ---------------------------------------------------------------- session


async def test_session_reconnects_once_after_a_drop(server: RFBTestServer) -> None:
    session = VNCSession("127.0.0.1", server.port, server.password)
    try:
        np.testing.assert_array_equal((await session.frame()).pixels, server.fb)
        first = session.client
        server.drop()
        assert first is not None
        await _poll(lambda: first.closed)
        server.paint(0, 0, _random_rgb(48, 64, seed=5))
        np.testing.assert_array_equal((await session.frame()).pixels, server.fb)
        assert server.connections == 2
        server.drop()
        await _poll(lambda: session.client is not None and session.client.closed)
        await session.perform(Click(3, 4))
        await server.wait_for(lambda _: PointerEvent(1, 3, 4) in server.input_events())
        assert server.connections == 3
    finally:
        await session.close()


async def test_session_fails_when_the_server_is_gone(server: RFBTestServer) -> None:
    session = VNCSession("127.0.0.1", server.port, server.password, timeout=2)
    try:
        await session.frame()
        await server.stop()
        with pytest.raises(VNCError, match="refused"):
            await session.frame()
    finally:
        await session.close()


# ---------------------------------------------------------------- live Xvnc

PASSWORD = "deskl00p"
TK_APP = """
import sys, tkinter as tk
root = tk.Tk()
root.geometry("600x300+100+100")
canvas = tk.Canvas(root, width=600, height=240, bg="#ff0000", highlightthickness=0)
canvas.pack()
entry = tk.Entry(root)
entry.pack(fill="x")
def say(*parts):
    print(*parts, flush=True)
canvas.bind("<ButtonPress-1>", lambda e: say("press", e.x, e.y))
canvas.bind("<ButtonRelease-1>", lambda e: say("release", e.x, e.y))
canvas.bind("<B1-Motion>", lambda e: say("motion", e.x, e.y))
canvas.bind("<Motion>", lambda e: say("hover", e.x, e.y))
canvas.bind("<Button-4>", lambda e: say("wheel", 4))
canvas.bind("<Button-5>", lambda e: say("wheel", 5))
entry.bind("<Return>", lambda e: say("text", repr(entry.get())))
root.bind_all("<KeyPress>", lambda e: say("key", "down", e.keysym, e.time))
root.bind_all("<KeyRelease>", lambda e: say("key", "up", e.keysym, e.time))
def ready():
    entry.focus_force()
    root.update()
    root.winfo_pointerxy()  # a round trip: the server has drawn everything before 'ready'
    say("ready")
root.after_idle(ready)
root.mainloop()
"""


@pytest.fixture(scope="module")
def xvnc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BareXvnc]:
    # scripts/setup.sh installs it; a missing one is a broken setup, not a skip.
    assert shutil.which("Xvnc"), "Xvnc not installed: run scripts/setup.sh"
    # retro: the classic root cursor, so the pointer is drawn into frames.
    with bare_xvnc(tmp_path_factory.mktemp("xvnc"), PASSWORD, retro=True) as desktop:
        yield desktop


@pytest.fixture
async def live(xvnc: BareXvnc) -> AsyncIterator[VNCClient]:
    c = await connect("127.0.0.1", xvnc.port, PASSWORD, timeout=5)
    yield c
    await c.close()


class TkApp:
    """The Tk test window; reports input events as lines on its stdout."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    async def expect(self, predicate: Callable[[str], bool], timeout: float = 5.0) -> str:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the Tk window did not report the expected line")
            line = await asyncio.wait_for(self.proc.stdout.readline(), remaining)
            if not line:
                raise AssertionError("the Tk window exited")
            text = line.decode().strip()
            if predicate(text):
                return text


@pytest.fixture
async def tk_app(xvnc: BareXvnc, live: VNCClient) -> AsyncIterator[TkApp]:
    # A missing tkinter must fail, not skip: setup.sh --tests installs python3-tk.
    assert importlib.util.find_spec("tkinter"), "no tkinter: run scripts/setup.sh --tests"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", TK_APP, env=xvnc.env, stdout=asyncio.subprocess.PIPE
    )
    app = TkApp(proc)
    try:
        await app.expect(lambda line: line == "ready", timeout=15)
        # Input sent in the first ~0.1 s after a Tk window maps is lost (measured:
        # without this, the first click or the first keys vanish). Wiggle the pointer
        # over the canvas until the window reports the motion.
        deadline = time.monotonic() + 10
        for attempt in itertools.count():
            assert time.monotonic() < deadline, "the Tk window never saw the pointer"
            await live.pointer(690 - attempt % 2, 330)
            try:
                await app.expect(lambda line: line.startswith("hover"), timeout=0.1)
                break
            except (TimeoutError, AssertionError):
                continue
        yield app
    finally:
        proc.kill()
        await proc.wait()


@pytest.mark.desktop
async def test_live_connect_frame_size(live: VNCClient) -> None:
    frame = await live.frame()
    assert (live.width, live.height) == (1280, 800)
    assert frame.pixels.shape == (800, 1280, 3)


@pytest.mark.desktop
async def test_live_wrong_password(xvnc: BareXvnc) -> None:
    with pytest.raises(VNCError, match="authentication failed"):
        await connect("127.0.0.1", xvnc.port, "wrong-pw", timeout=5)


@pytest.mark.desktop
async def test_live_window_shows_in_the_next_frame(live: VNCClient, tk_app: TkApp) -> None:
    frame = await live.frame()
    canvas = frame.pixels[100:340, 100:700]
    red = (canvas == (255, 0, 0)).all(axis=2)
    # The pointer may sit over the canvas; everything else is pure red.
    assert red.mean() > 0.99
    outside = frame.pixels[400:800, 800:1280]
    assert not (outside == (255, 0, 0)).all(axis=2).any()


@pytest.mark.desktop
async def test_live_typing_reaches_the_application(live: VNCClient, tk_app: TkApp) -> None:
    await live.perform(Type("Hello World! ~x"))
    await live.perform(Key("enter"))
    line = await tk_app.expect(lambda text: text.startswith("text "))
    assert line == "text 'Hello World! ~x'"


@pytest.mark.desktop
async def test_live_doubled_letters_are_not_taken_for_auto_repeat(
    live: VNCClient, tk_app: TkApp
) -> None:
    # Qt and Blender take a key's release followed by its press at the same X server
    # time for auto-repeat (Blender's text fields then drop the second 'l' of "Hello").
    await live.perform(Type("hello"))
    events: list[tuple[str, str, int]] = []
    while len(events) < 10:
        line = await tk_app.expect(lambda text: text.startswith("key "))
        _, updown, keysym, stamp = line.split()
        events.append((updown, keysym, int(stamp)))
    assert [(u, k) for u, k, _ in events] == [(u, k) for k in "hello" for u in ("down", "up")]
    first_l_up, second_l_down = events[5], events[6]
    assert second_l_down[2] > first_l_up[2], events


@pytest.mark.desktop
async def test_live_click_drag_and_scroll(live: VNCClient, tk_app: TkApp) -> None:
    await live.perform(Click(150, 150))
    assert await tk_app.expect(lambda t: t.startswith("press")) == "press 50 50"
    assert await tk_app.expect(lambda t: t.startswith("release")) == "release 50 50"
    await live.perform(Drag(200, 200, 500, 300))
    motion = await tk_app.expect(lambda t: t.startswith("motion"))
    assert motion != "motion 400 200"  # an intermediate point came first
    assert await tk_app.expect(lambda t: t.startswith("release")) == "release 400 200"
    await live.perform(Scroll(300, 200, 2))
    assert await tk_app.expect(lambda t: t.startswith("wheel")) == "wheel 5"
    await live.perform(Scroll(300, 200, -1))
    assert await tk_app.expect(lambda t: t == "wheel 4") == "wheel 4"


@pytest.mark.desktop
async def test_live_pointer_move_changes_the_frame_and_settle_sees_it(
    live: VNCClient,
) -> None:
    await live.perform(Move(900, 600))
    await live.settle()
    before = await live.frame()
    await live.perform(Move(1000, 650))
    result = await live.settle(timeout=3)
    assert result.changed and result.settled
    after = await live.frame()
    changed = np.argwhere((before.pixels != after.pixels).any(axis=2))
    assert len(changed) > 0
    # Only around the old and new pointer positions.
    assert changed[:, 0].min() >= 580 and changed[:, 0].max() <= 690
    assert changed[:, 1].min() >= 880 and changed[:, 1].max() <= 1040
    quiet = await live.settle(timeout=3)
    assert not quiet.changed and quiet.settled
