"""The adapters' pure parts: coordinate contracts, key names, and each family's answers
read as DeskLoop actions (never executed), malformed ones refused with a reason."""

from __future__ import annotations

import math

import pytest

from app.agents.adapters import ADAPTERS, CoordinateContract, smart_resize
from app.agents.adapters.anthropic import computer_action
from app.agents.adapters.base import Pointer, Shot
from app.agents.adapters.openai_cua import cua_action
from app.agents.adapters.pyautogui_code import read_pyautogui
from app.agents.adapters.qwen import read_qwen
from app.agents.adapters.uitars import read_uitars
from app.agents.families import FAMILY_NAMES
from app.cli.agent_options import ADAPTER_CHOICES, COORD_CHOICES
from app.core.actions import Ask, Click, Done, Drag, Fail, Key, Move, Scroll, Type, Wait
from app.core.errors import ActionError, MalformedAction
from app.core.keys import KEY_ALIASES, combo_of, normalize_key, xdotool_combos

SCREEN = (1280, 800)


def contract(convention: str, box: tuple[int, int] = (1280, 800)) -> CoordinateContract:
    return CoordinateContract.make(convention, SCREEN, box)  # type: ignore[arg-type]


def test_the_command_line_names_the_families_tables_adapters() -> None:
    assert FAMILY_NAMES == ("deskloop", *ADAPTERS) == ADAPTER_CHOICES
    from app.agents.adapters import CONVENTIONS

    assert COORD_CHOICES == CONVENTIONS


def test_smart_resize_is_qwens() -> None:
    # Rounded to multiples of 28 (qwen_vl_utils.smart_resize's worked values).
    assert smart_resize(1280, 800) == (1288, 812)
    assert smart_resize(1920, 1080) == (1932, 1092)
    # Over max_pixels: scaled down with the aspect kept, floored to the grid.
    width, height = smart_resize(1920, 1080, max_pixels=1280 * 28 * 28)
    assert width % 28 == 0 and height % 28 == 0 and width * height <= 1280 * 28 * 28
    assert abs(width / height - 1920 / 1080) < 0.05


@pytest.mark.parametrize(
    ("convention", "box", "sent"),
    [
        ("pixels", (1024, 1024), (1024, 640)),
        ("0-1", (1280, 800), (1280, 800)),
        ("0-1000", (1280, 800), (1280, 800)),
        ("qwen-grid", (1280, 800), (1288, 812)),
    ],
)
def test_each_convention_maps_a_known_point_back(
    convention: str, box: tuple[int, int], sent: tuple[int, int]
) -> None:
    terms = contract(convention, box)
    assert terms.sent == sent
    # An image smaller than the screen cannot name every screen pixel: within one of
    # its pixels, then.
    slack = math.ceil(SCREEN[0] / sent[0]) - 1 if convention == "pixels" else 0
    for target in [(0, 0), (1279, 799), (640, 400), (123, 456)]:
        model = terms.from_screen(*target)
        x, y = terms.to_screen(*model, "click")
        assert abs(x - target[0]) <= slack and abs(y - target[1]) <= slack
    assert terms.public()["convention"] == convention


def test_an_api_that_rescales_large_images_gets_them_within_its_bounds() -> None:
    # Anthropic's: at most 1.15 MP and 1568 px on the long side.
    big = CoordinateContract.make(
        "pixels", (1920, 1080), (1920, 1080), max_area=1_150_000, max_edge=1568
    )
    assert big.sent[0] * big.sent[1] <= 1_150_000 and abs(big.sent[0] / big.sent[1] - 16 / 9) < 0.01
    wide = CoordinateContract.make("pixels", (3840, 1080), (3840, 1080), max_edge=1568)
    assert wide.sent == (1568, 441)
    assert CoordinateContract.make("pixels", SCREEN, SCREEN, max_area=1_150_000).sent == SCREEN


@pytest.mark.parametrize(
    ("convention", "point", "problem"),
    [
        ("pixels", (1280, 10), "outside the 1280x800 screenshot"),
        ("0-1", (1.5, 0.5), "outside the 0-1 range"),
        ("0-1000", (10, -1), "outside the 0-1000 range"),
        ("qwen-grid", (1288, 0), "outside the 1288x812 screenshot"),
        ("pixels", ("10", 5), "must be numbers"),
    ],
)
def test_points_outside_the_contract_are_refused(
    convention: str, point: tuple[object, object], problem: str
) -> None:
    with pytest.raises(ActionError, match=problem):
        contract(convention).to_screen(*point, "click")


@pytest.mark.parametrize(
    ("names", "combo"),
    [
        (["ctrl", "c"], "ctrl+c"),  # pyautogui
        (["ctrlleft", "shiftleft", "e"], "ctrl+shift+e"),
        (["command", "option", "esc"], "super+alt+esc"),
        (["Control_L", "Return"], "ctrl+enter"),  # X keysyms
        (["Page_Down"], "pagedown"),
        (["KP_Enter"], "enter"),
        (["CTRL", "A"], "ctrl+A"),  # OpenAI's
        (["ARROWLEFT"], "left"),
        (["ESC"], "esc"),
        (["e", "shift", "ctrl"], "shift+ctrl+e"),  # modifiers first
        (["semicolon"], ";"),
        (["CTRL+S"], "ctrl+S"),  # a combo written as one key
        (["ctrl", "+"], "ctrl++"),
    ],
)
def test_key_names_of_every_family_become_deskloops(names: list[str], combo: str) -> None:
    assert combo_of(names) == combo


def test_unknown_keys_and_two_keys_at_once_are_refused() -> None:
    with pytest.raises(ActionError, match="unknown key name 'Hyper_Q'"):
        normalize_key("Hyper_Q")
    with pytest.raises(ActionError, match="a combo holds modifiers and one key"):
        combo_of(["a", "b"])
    assert xdotool_combos("ctrl+shift+t Return Return") == ["ctrl+shift+t", "enter", "enter"]
    assert all(normalize_key(alias) for alias in KEY_ALIASES)


# -- pyautogui ----------------------------------------------------------------------------

OSWORLD_ANSWER = """\
The Export dialog is open; I will type the name and confirm.
```python
import pyautogui
import time
pyautogui.click(640, 400)
time.sleep(0.5)
pyautogui.hotkey('ctrl', 'a')
pyautogui.typewrite('photo-flipped.png', interval=0.05)
pyautogui.press('enter')
pyautogui.doubleClick(x=10, y=20)
pyautogui.rightClick(100, 100)
pyautogui.moveTo(300, 300, duration=0.2)
pyautogui.dragTo(400, 350, button='left')
pyautogui.scroll(-3, x=50, y=60)
pyautogui.keyDown('shift')
pyautogui.press('tab')
pyautogui.keyUp('shift')
pyautogui.keyDown('esc'); pyautogui.keyUp('esc')
pyautogui.press(['down', 'down'])
```"""


def test_osworld_code_becomes_actions_in_order() -> None:
    pointer = Pointer()
    reading = read_pyautogui(OSWORLD_ANSWER, contract("pixels"), pointer)
    assert reading.actions == [
        Click(640, 400),  # the time.sleep(0.5) after it was pacing: the runner settles
        Key("ctrl+a"),
        Type("photo-flipped.png"),
        Key("enter"),
        Click(10, 20, "left", 2),
        Click(100, 100, "right"),
        Move(300, 300),
        Drag(300, 300, 400, 350),
        Scroll(50, 60, 3),
        Key("shift+tab"),
        Key("esc"),
        Key("down"),
        Key("down"),
    ]
    assert pointer.at == (50, 60)


@pytest.mark.parametrize(
    ("answer", "actions"),
    [
        ("DONE", [Done()]),
        ("```\nFAIL\n```", [Fail("the model gave up")]),
        ("WAIT", [Wait(1.0)]),
        ('```python\nASK("Which width?")\n```', [Ask("Which width?")]),
        ("computer.terminate(status='failure')", [Fail("terminate(status='failure')")]),
        ("agent.done()", [Done()]),
        ("pyautogui.click(0.5, 0.25)", [Click(640, 200)]),  # with the 0-1 contract below
    ],
)
def test_protocol_words_and_relative_points(answer: str, actions: list[object]) -> None:
    terms = contract("0-1") if "0.5" in answer else contract("pixels")
    assert read_pyautogui(answer, terms, Pointer()).actions == actions


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("import os\nos.system('rm -rf ~')", "only pyautogui and time are read"),
        ("pyautogui.click(1, 1)\nos.system('ls')", "os.system.. is not one of the calls"),
        ("x = 5\npyautogui.click(x, 5)", "assign statements are not read"),
        ("for i in range(3):\n    pyautogui.press('a')", "for statements are not read"),
        ("pyautogui.click(100 + 20, 5)", "arguments must be literal values"),
        ("pyautogui.locateCenterOnScreen('ok.png')", "not one of the calls DeskLoop reads"),
        ("pyautogui.click(5000, 5)", "outside the 1280x800 screenshot"),
        ("pyautogui.press('hyperspace')", "unknown key name 'hyperspace'"),
        ("pyautogui.keyDown('ctrl')\npyautogui.click(5, 5)", "while ctrl is held down"),
        ("```python\npyautogui.click(5, 5\n```", "the code does not parse: '.' was never closed"),
        ("pyautogui.click(5, 5", "no code block.*not Python either: '.' was never closed"),
        ("DONE\npyautogui.click(5, 5)", "comes after the episode's end word"),
        ("I am not sure what to do.", "^no code block: expected a ```python block"),
        ("", "no code"),
    ],
)
def test_anything_else_refuses_the_whole_answer(answer: str, reason: str) -> None:
    pointer = Pointer((7, 7))
    with pytest.raises(MalformedAction, match=reason) as caught:
        read_pyautogui(answer, contract("pixels"), pointer)
    assert caught.value.raw == answer
    assert pointer.at == (7, 7)  # nothing of a refused answer acts


def test_sleeps_beside_calls_are_pacing_and_alone_are_waits() -> None:
    terms = contract("pixels")
    paced = "pyautogui.press('a')\ntime.sleep(1)\npyautogui.press('b')\ntime.sleep(5)"
    assert read_pyautogui(paced, terms, Pointer()).actions == [Key("a"), Key("b"), Wait(5)]
    assert read_pyautogui("time.sleep(1.5)", terms, Pointer()).actions == [Wait(1.5)]


def test_a_drag_needs_to_know_where_the_pointer_is() -> None:
    with pytest.raises(MalformedAction, match="starts where the pointer is"):
        read_pyautogui("pyautogui.dragTo(10, 10)", contract("pixels"), Pointer())
    moved = read_pyautogui(
        "pyautogui.moveTo(5, 5)\npyautogui.dragTo(10, 10)", contract("pixels"), Pointer()
    )
    assert moved.actions == [Move(5, 5), Drag(5, 5, 10, 10)]


# -- UI-TARS ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ("click(start_box='(500,500)')", Click(640, 400)),
        ("click(start_box='<|box_start|>(500,500)<|box_end|>')", Click(640, 400)),
        ("left_double(start_box='[490,490,510,510]')", Click(640, 400, "left", 2)),
        ("right_single(start_box='<point>250 250</point>')", Click(320, 200, "right")),
        ("drag(start_box='(0,0)', end_box='(500,500)')", Drag(0, 0, 640, 400)),
        ("hotkey(key='ctrl shift e')", Key("ctrl+shift+e")),
        ("type(content='photo-flipped.png\\n')", Type("photo-flipped.png\n")),
        ("scroll(start_box='(500,500)', direction='up')", Scroll(640, 400, -5)),
        ("wait()", Wait(5.0)),
        # The content is the DONE's answer: UI-TARS's only way to return one.
        ("finished(content='Exported.')", Done("Exported.")),
        ("finished(content='2')", Done(2)),
        ("finished()", Done()),
        ("call_user()", Ask("Which file do you mean?")),
    ],
)
def test_uitars_actions(action: str, expected: object) -> None:
    text = f"Thought: Which file do you mean?\nAction: {action}"
    assert read_uitars(text, contract("0-1000"), Pointer()).actions == [expected]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("Thought: hm", "no 'Action:' line"),
        ("Action: launch(app='gimp')", "not in UI-TARS's action space"),
        ("Action: click(start_box='(1500,5)')", "outside the 0-1000 range"),
        ("Action: scroll(start_box='(5,5)', direction='left')", "scrolls down or up"),
        ("Action: click(start_box=__import__('os'))", "must be a literal string"),
    ],
)
def test_uitars_malformed(text: str, reason: str) -> None:
    with pytest.raises(MalformedAction, match=reason):
        read_uitars(text, contract("0-1000"), Pointer())


# -- Qwen -----------------------------------------------------------------------------------


def test_qwen_calls_in_text_and_in_tool_calls() -> None:
    terms = contract("qwen-grid")
    text = {
        "content": '<tool_call>\n{"name": "computer_use", "arguments": {"action": '
        '"left_click", "coordinate": [644, 406]}}\n</tool_call>'
    }
    assert read_qwen(text, terms, Pointer(), {}).actions == [Click(640, 400)]
    parsed = {
        "content": None,
        "tool_calls": [
            {
                "id": "c",
                "type": "function",
                "function": {
                    "name": "computer_use",
                    "arguments": '{"action": "key", "keys": ["ctrl", "s"]}',
                },
            },
            {
                "id": "d",
                "type": "function",
                "function": {
                    "name": "computer_use",
                    "arguments": '{"action": "terminate", "status": "success"}',
                },
            },
        ],
    }
    assert read_qwen(parsed, terms, Pointer(), {}).actions == [Key("ctrl+s"), Done()]
    ask = {
        "content": '<tool_call>{"name": "ask_user", "arguments": {"question": "Which?"}}'
        "</tool_call>"
    }
    assert read_qwen(ask, terms, Pointer(), {}).actions == [Ask("Which?")]
    with pytest.raises(MalformedAction, match="unknown action 'launch'"):
        read_qwen(
            {
                "content": '<tool_call>{"name": "computer_use", "arguments": '
                '{"action": "launch"}}</tool_call>'
            },
            terms,
            Pointer(),
            {},
        )
    with pytest.raises(MalformedAction, match="no action"):
        read_qwen({"content": "I would click the button."}, terms, Pointer(), {})


# -- Anthropic and OpenAI tool inputs ------------------------------------------------------


def shot(convention: str = "pixels", box: tuple[int, int] = (1024, 1024)) -> Shot:
    return Shot(contract(convention, box), "")


def test_anthropic_computer_actions() -> None:
    pointer = Pointer()
    terms = shot()  # 1280x800 sent as 1024x640
    # Before any action moved the pointer, its position is plainly not known.
    assert computer_action({"action": "cursor_position"}, terms, pointer) == (
        [],
        "The pointer's position is not known yet: none of your actions has moved it.",
    )
    assert computer_action({"action": "left_click", "coordinate": [512, 320]}, terms, pointer) == (
        [Click(640, 400)],
        None,
    )
    pointer.at = (640, 400)
    assert computer_action({"action": "cursor_position"}, terms, pointer) == ([], "X=512,Y=320")
    assert computer_action({"action": "screenshot"}, terms, pointer) == ([], "")
    drag = {"action": "left_click_drag", "start_coordinate": [0, 0], "coordinate": [512, 320]}
    assert computer_action(drag, terms, pointer)[0] == [Drag(0, 0, 640, 400)]
    scroll = {
        "action": "scroll",
        "coordinate": [512, 320],
        "scroll_direction": "up",
        "scroll_amount": 3,
    }
    assert computer_action(scroll, terms, pointer)[0] == [Scroll(640, 400, -3)]
    assert computer_action({"action": "key", "text": "ctrl+s"}, terms, pointer)[0] == [
        Key("ctrl+s")
    ]
    for refused, reason in [
        ({"action": "hold_key", "text": "shift", "duration": 1}, "hold_key"),
        ({"action": "left_click", "coordinate": [1, 1], "text": "shift"}, "hold no keys"),
        ({"action": "zoom"}, "unknown action 'zoom'"),
    ]:
        with pytest.raises(ActionError, match=reason):
            computer_action(refused, terms, pointer)


def test_openai_computer_actions() -> None:
    terms = shot()
    assert cua_action({"type": "click", "button": "wheel", "x": 512, "y": 320}, terms) == [
        Click(640, 400, "middle")
    ]
    assert cua_action({"type": "keypress", "keys": ["CTRL", "SHIFT", "E"]}, terms) == [
        Key("ctrl+shift+E")
    ]
    assert cua_action(
        {"type": "scroll", "x": 0, "y": 0, "scroll_x": 0, "scroll_y": 300}, terms
    ) == [Scroll(0, 0, 3)]
    path = {"type": "drag", "path": [{"x": 0, "y": 0}, {"x": 5, "y": 5}, {"x": 512, "y": 320}]}
    assert cua_action(path, terms) == [Drag(0, 0, 640, 400)]
    assert cua_action({"type": "screenshot"}, terms) is None
    with pytest.raises(ActionError, match="back"):
        cua_action({"type": "click", "button": "back", "x": 1, "y": 1}, terms)


def test_mouse_down_up_is_a_drag_and_pyautogui_settings_are_ignored() -> None:
    code = """
pyautogui.PAUSE = 0.5
pyautogui.FAILSAFE = False
pyautogui.mouseDown(100, 100)
pyautogui.moveTo(150, 120, duration=0.3)
pyautogui.moveTo(200, 140)
pyautogui.mouseUp()
pyautogui.mouseDown(300, 300, button='right'); pyautogui.mouseUp(300, 300, button='right')
pyautogui.scroll(-2)
"""
    assert read_pyautogui(code, contract("pixels"), Pointer()).actions == [
        Drag(100, 100, 200, 140),
        Click(300, 300, "right"),
        Scroll(300, 300, 2),
    ]
    # Before anything put the pointer somewhere, a scroll is in the screen's middle.
    assert read_pyautogui("pyautogui.scroll(3)", contract("pixels"), Pointer()).actions == [
        Scroll(640, 400, -3)
    ]
    for code, reason in [
        ("pyautogui.mouseDown(1, 1)\npyautogui.press('a')\npyautogui.mouseUp()", "held down"),
        ("pyautogui.mouseDown(1, 1)", "without a mouseUp"),
        ("pyautogui.mouseUp(1, 1)", "without a mouseDown"),
        ("pyautogui.PAUSE = os.system('x')", "assign statements are not read"),
    ]:
        with pytest.raises(MalformedAction, match=reason):
            read_pyautogui(code, contract("pixels"), Pointer())


ANTHROPIC_NEW = ("computer_20251124", "computer-use-2025-11-24")
ANTHROPIC_OCT = ("computer_20241022", "computer-use-2024-10-22")
ANTHROPIC_JAN = ("computer_20250124", "computer-use-2025-01-24")


@pytest.mark.parametrize(
    ("adapter", "model", "tool", "coords"),
    [
        ("anthropic", "claude-3-5-sonnet-20241022", ANTHROPIC_OCT, "pixels"),
        ("anthropic", "claude-3-7-sonnet-20250219", ANTHROPIC_JAN, "pixels"),
        ("anthropic", "claude-sonnet-4-5", ANTHROPIC_JAN, "pixels"),
        ("anthropic", "claude-haiku-4-5-20251001", ANTHROPIC_JAN, "pixels"),
        ("anthropic", "claude-opus-4-1-20250805", ANTHROPIC_JAN, "pixels"),
        ("anthropic", "claude-opus-4-5-20251101", ANTHROPIC_NEW, "pixels"),
        ("anthropic", "claude-opus-4-6", ANTHROPIC_NEW, "pixels"),
        ("anthropic", "claude-sonnet-4-6", ANTHROPIC_NEW, "pixels"),
        ("anthropic", "claude-opus-4-7", ANTHROPIC_NEW, "pixels"),
        ("anthropic", "anthropic.claude-opus-4-6-v1", ANTHROPIC_NEW, "pixels"),
        ("openai-cua", "computer-use-preview", ("computer_use_preview", None), "pixels"),
        ("openai-cua", "computer-use-preview-2025-03-11", ("computer_use_preview", None), "pixels"),
        ("openai-cua", "gpt-5.4", ("computer", None), "pixels"),
        ("openai-cua", "gpt-5.4-mini", ("computer", None), "pixels"),
        ("openai-cua", "gpt-5.5", ("computer", None), "pixels"),
        ("openai-cua", "gpt-5", ("computer_use_preview", None), "pixels"),
        ("qwen", "Qwen/Qwen3-VL-30B-A3B-Instruct", (None, None), "0-1000"),
        ("qwen", "Qwen/Qwen2.5-VL-7B-Instruct", (None, None), "qwen-grid"),
        ("uitars", "ByteDance-Seed/UI-TARS-1.5-7B", (None, None), "qwen-grid"),
        ("uitars", "bytedance-research/UI-TARS-7B-DPO", (None, None), "0-1000"),
        ("pyautogui", "xlangai/OpenCUA-7B", (None, None), "pixels"),
    ],
)
def test_the_format_table_gives_each_model_its_tool_beta_and_coordinates(
    adapter: str, model: str, tool: tuple[str | None, str | None], coords: str
) -> None:
    from app.agents.adapters.formats import model_format

    row = model_format(adapter, model)
    assert ((row.tool, row.beta), row.coords) == (tool, coords)


def test_each_claudes_screenshot_stays_within_what_its_api_keeps() -> None:
    from app.agents.adapters.formats import model_format

    def sent(model: str) -> tuple[int, int]:
        row = model_format("anthropic", model)
        return CoordinateContract.make(
            "pixels", (1920, 1080), (1920, 1080), max_area=row.max_area, max_edge=row.max_edge
        ).sent

    assert sent("claude-opus-4-6") == sent("claude-sonnet-4-5") == (1429, 804)
    assert sent("claude-opus-4-7") == (1920, 1080)  # 2576 px on the long side, 3.6 MP


def test_the_written_out_tool_names_match_the_table() -> None:
    from app.agents.adapters.formats import FORMATS, TOOLS
    from app.cli.agent_options import COMPUTER_TOOL_CHOICES

    assert tuple(tool for tools in TOOLS.values() for tool in tools) == COMPUTER_TOOL_CHOICES
    # Every row's tool is one its family has, and every family ends with a catch-all.
    for row in FORMATS:
        assert row.tool is None or row.tool in TOOLS[row.adapter], row
    assert {row.adapter for row in FORMATS if row.models == ""} == set(ADAPTERS)
