"""What every adapter is made of: the `Family` protocol (a request in the family's
wire format, and its answer read back as DeskLoop actions), the screenshot it is
shown, and the pointer the agent keeps track of."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from app.agents.adapters.coords import CoordinateContract
from app.agents.base import Observation
from app.core.actions import Action, Ask, Click, Done, Drag, Move, Scroll, answer_from_text
from app.core.conversation import Message, message_step
from app.core.errors import ActionError, MalformedAction
from app.endpoints.client import KeyHeader


@dataclass(frozen=True)
class Shot:
    """The screenshot of one decision, made for the adapter's coordinate contract."""

    contract: CoordinateContract
    png_base64: str

    @property
    def data_url(self) -> str:
        return "data:image/png;base64," + self.png_base64


@dataclass
class Pointer:
    """Where the pointer is on the screen, as far as the agent's own actions say
    (None until one of them puts it somewhere): for actions that start where it is
    (pyautogui's dragTo, a click without a point, Anthropic's cursor_position)."""

    at: tuple[int, int] | None = None

    def follow(self, action: Action) -> None:
        match action:
            case Click(x, y, _, _) | Move(x, y) | Scroll(x, y, _):
                self.at = (x, y)
            case Drag(_, _, x2, y2, _):
                self.at = (x2, y2)

    def need(self, what: str) -> tuple[int, int]:
        if self.at is None:
            raise ActionError(
                f"{what} starts where the pointer is, and no action has put it anywhere "
                "yet: give the point"
            )
        return self.at


@dataclass
class Reading:
    """What one answer means."""

    actions: list[Action] = field(default_factory=list)
    """DeskLoop actions in screen pixels, in order (an answer may hold several)."""
    look_again: bool = False
    """The answer asked only to look (a screenshot, where the pointer is): the agent
    asks again at once with the same screen, taking no step."""


class Family(Protocol):
    """One model family's wire format. Stateful families (Anthropic, OpenAI computer
    use) keep their conversation between `request`s; `reset` starts it afresh."""

    path: str
    """Appended to the base URL: '/chat/completions', '/messages', '/responses'."""
    key_header: KeyHeader
    """How the key is sent (see `EndpointClient`)."""

    def reset(self) -> None: ...

    def headers(self) -> dict[str, str]: ...

    def request(self, observation: Observation, shot: Shot) -> dict[str, Any]:
        """The whole request body for this decision."""
        ...

    def read(
        self, data: dict[str, Any], shot: Shot, pointer: Pointer, info: dict[str, Any]
    ) -> Reading:
        """The answer's actions; what it held goes into `info`, the step's record.

        Raises:
            MalformedAction: the answer is not usable; the reason is what the model is
                told next.
        """
        ...

    def rejected(self, reason: str) -> None:
        """The last answer was refused for `reason`: say so in the next request."""
        ...

    def dropped(self, count: int) -> None:
        """The last `count` actions of the last answer were not taken (a new user
        message came first): say so, where the family's format has a place for it."""
        ...

    def usage(self, data: dict[str, Any]) -> dict[str, Any]:
        """prompt_tokens, completion_tokens and total_tokens of an answer (None when
        the endpoint did not say)."""
        ...


def tool_answer(arguments: Any) -> Any:
    """The answer of DeskLoop's `done` tool (Anthropic, OpenAI computer use): its
    `answer` argument, any JSON value; a string is read as JSON where it is JSON (see
    `answer_from_text`), as every family's text answers are.

    Raises:
        ActionError: the arguments are not an object.
    """
    if arguments is None:
        return None
    if not isinstance(arguments, dict):
        raise ActionError(f"done: input must be an object, not {arguments!r}")
    answer = arguments.get("answer")
    return answer_from_text(answer) if isinstance(answer, str) else answer


def ending(policy: str) -> str:
    """What the prompt of a family with text-only turns (Anthropic, OpenAI computer
    use) says about ending, as the run's `text_turn` policy reads such a turn."""
    if policy == "ask":
        return (
            "When the active instruction is satisfied, call done (when it asks for a "
            "value, a number, a name, a list, give that value as answer). A message "
            "without a tool call is your question to the user: their answer comes next."
        )
    return (
        "When the active instruction is satisfied, answer with a short summary and no "
        "tool call; when it asks for a value (a number, a name, a list), call done with "
        "that value as answer instead."
    )


def text_turn(policy: str, text: str, info: dict[str, Any], raw: Any) -> Reading:
    """A turn of text without a tool call, read by the run's policy (`AdapterConfig.
    text_turn`): `done`, a DONE (the text, recorded as `content`, is a summary);
    `ask`, the agent's question to the user. `info` records the policy applied.

    Raises:
        MalformedAction: `ask`, and the turn has no text to ask.
    """
    info["text_turn"] = policy
    if policy != "ask":
        return Reading([Done()])
    if not text.strip():
        raise MalformedAction("the answer has neither a tool call nor text", raw)
    return Reading([Ask(text.strip())])


def malformed(exc: ActionError | MalformedAction, raw: Any) -> MalformedAction:
    """An action error met while reading an answer, as the rejected step's reason."""
    return MalformedAction(str(exc), raw)


def conversation_text(observation: Observation, shown: int = 0) -> str:
    """The conversation from message `shown` on, oldest first, the active instruction
    marked: what a family's own conversation turns carry as the user's words."""
    lines = []
    active = observation.active_message
    for message in observation.conversation[shown:]:
        lines.append(_line(message, message is active))
    return "\n".join(lines)


def _line(message: Message, active: bool) -> str:
    who = "User" if message.role == "user" else "You"
    mark = "  <- ACTIVE INSTRUCTION" if active else ""
    where = message_step(message.step, message.role)
    return f"[{where}] {who} ({message.kind}): {message.text}{mark}"


def chat_state(observation: Observation, answers: Sequence[tuple[int, str, str | None]]) -> str:
    """The user turn of a stateless chat family: the whole conversation, the model's
    recent answers (step, raw text, a note: why it was refused, or what of it was not
    run) and the step count."""
    lines = ["Conversation so far (oldest first):", conversation_text(observation)]
    if answers:
        lines += ["", "Your recent answers:"]
        for step, text, refused in answers:
            lines.append(f"step {step}: {text.strip()}")
            if refused:
                lines.append(f"  -- {refused}")
    lines += ["", f"Steps taken: {observation.steps_taken}. The current screenshot follows."]
    return "\n".join(lines)


def chat_usage(data: dict[str, Any]) -> dict[str, Any]:
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return {
        "prompt_tokens": usage.get("prompt_tokens"),
        "completion_tokens": usage.get("completion_tokens"),
        "total_tokens": usage.get("total_tokens"),
    }


def chat_reply(data: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
    """The assistant message of a chat completion; its finish reason into `info`.

    Raises:
        MalformedAction: no choice or no message.
    """
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise MalformedAction("the answer has no choices", data)
    info["finish_reason"] = choices[0].get("finish_reason")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise MalformedAction("the answer's choice has no message", data)
    return message
