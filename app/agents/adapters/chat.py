"""The families that answer through chat completions (`POST {base_url}/chat/completions`,
vLLM, SGLang, any OpenAI-compatible server): pyautogui code, UI-TARS text actions and
Qwen's `computer_use` calls. Each request is stateless, as the DeskLoop tools agent's:
the family's own system prompt, then one user turn with the whole conversation, the
model's recent answers (and why any was refused) and the screenshot; so the user's
messages reach the model as user turns, whatever came before."""

from __future__ import annotations

import json
from typing import Any, Literal

from app.agents.adapters import pyautogui_code, qwen, uitars
from app.agents.adapters.base import (
    Pointer,
    Reading,
    Shot,
    chat_reply,
    chat_state,
    chat_usage,
)
from app.agents.adapters.config import AdapterConfig
from app.agents.adapters.coords import CoordinateContract
from app.agents.base import Observation
from app.core.actions import Done
from app.endpoints.client import KeyHeader, chat_body, message_text

ChatKind = Literal["pyautogui", "uitars", "qwen"]

PYAUTOGUI_PROMPT = """\
You control a Linux desktop for a user by writing Python code that uses `pyautogui`. \
Each turn you see a screenshot of the screen and the conversation with the user; answer \
with a short reflection and then one ```python code block that performs the next action \
(one or a few lines: pyautogui.click, doubleClick, rightClick, moveTo, dragTo, scroll, \
write, press, hotkey, keyDown, keyUp, and time.sleep between lines). Nothing is shared \
between turns. Do not call pyautogui.screenshot or locateOnScreen. {coordinates}
Instead of code you may answer with one of these words in a code block: ```WAIT``` when \
you have to wait, ```DONE``` when the latest request is satisfied (```DONE(answer)``` when it asks \
for a value: DONE(2), DONE("Coffee still life"), DONE(["a", "b"])), ```FAIL``` when it \
cannot be done (try your best first). To ask the user a question, answer \
```ASK("your question")```. Earlier user messages stay in force unless a later one says \
otherwise.
"""

QWEN_PROMPT = """\
You are a helpful assistant operating a Linux desktop for a user through the computer_use \
function. The user's messages are in the conversation; the latest is the active \
instruction. When it is done call computer_use with action=terminate and status=success; \
if it cannot be done, status=failure. When it asks for a value (a number, a name, a \
list), first call computer_use with action=answer and the value as text, then \
terminate. To ask the user something, call ask_user.
"""


def coordinates_sentence(contract: CoordinateContract) -> str:
    width, height = contract.sent
    if contract.convention == "0-1":
        return "Coordinates are fractions 0-1 of the screenshot's width and height."
    if contract.convention == "0-1000":
        return "Coordinates are 0-1000 of the screenshot's width and height."
    return f"The screenshot is {width}x{height} pixels; coordinates are its pixels."


class ChatFamily:
    """One of the chat-completion families (see the module doc)."""

    path = "/chat/completions"
    key_header: KeyHeader = "bearer"

    def __init__(self, config: AdapterConfig, kind: ChatKind) -> None:
        self.config = config
        self.kind = kind
        self.reset()

    def reset(self) -> None:
        self.answers: list[tuple[int, str, str | None]] = []
        self.shots: list[tuple[int, str, str]] = []
        """(step, screenshot data URL, the answer to it): the earlier screenshots."""
        self.step = 0
        self.shot = ""
        self.answer: Any = None
        """Qwen: the value of an `answer` action that no DONE has carried yet."""

    def headers(self) -> dict[str, str]:
        return {}

    def request(self, observation: Observation, shot: Shot) -> dict[str, Any]:
        self.step = observation.steps_taken
        contract = shot.contract
        if self.kind == "pyautogui":
            system = PYAUTOGUI_PROMPT.format(coordinates=coordinates_sentence(contract))
        elif self.kind == "uitars":
            system = uitars.SYSTEM_PROMPT
        else:
            system = QWEN_PROMPT
        self.shot = shot.data_url
        recent = self.answers[-self.config.history :] if self.config.history else []
        user = [
            {"type": "text", "text": chat_state(observation, recent)},
            {"type": "image_url", "image_url": {"url": shot.data_url}},
        ]
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
        earlier = self.config.screenshots - 1
        for step, url, answer in self.shots[-earlier:] if earlier else []:
            # The model's own turns, as UI-TARS-style histories hold them.
            seen = [
                {"type": "text", "text": f"The screen at step {step}:"},
                {"type": "image_url", "image_url": {"url": url}},
            ]
            messages.append({"role": "user", "content": seen})
            messages.append({"role": "assistant", "content": answer})
        messages.append({"role": "user", "content": user})
        extra: dict[str, Any] = {}
        if self.kind == "qwen":
            extra = {"tools": qwen.tools(contract), "tool_choice": "auto"}
        return chat_body(self.config, messages, **extra)

    def read(
        self, data: dict[str, Any], shot: Shot, pointer: Pointer, info: dict[str, Any]
    ) -> Reading:
        message = chat_reply(data, info)
        text = message_text(message.get("content")) or ""
        if text:
            info["content"] = text
        said = text or json.dumps(message.get("tool_calls"))[:2000]
        self.answers.append((self.step, said, None))
        if self.config.screenshots > 1:
            self.shots = [
                *self.shots[-(self.config.screenshots - 1) :],
                (self.step, self.shot, said),
            ]
        if self.kind == "qwen":
            reading = qwen.read_qwen(message, shot.contract, pointer, info, self.answer)
            self.answer = info.get("answer", self.answer)
            if any(isinstance(action, Done) for action in reading.actions):
                self.answer = None
            return reading
        if self.kind == "uitars":
            return uitars.read_uitars(text, shot.contract, pointer)
        return pyautogui_code.read_pyautogui(text, shot.contract, pointer)

    def rejected(self, reason: str) -> None:
        if self.answers:
            step, text, _ = self.answers[-1]
            self.answers[-1] = (step, text, f"REJECTED: {reason}")

    def dropped(self, count: int) -> None:
        if self.answers:
            step, text, _ = self.answers[-1]
            why = f"NOT ALL RUN: its last {count} action(s) were not run: the user spoke first"
            self.answers[-1] = (step, text, why)

    def usage(self, data: dict[str, Any]) -> dict[str, Any]:
        return chat_usage(data)
