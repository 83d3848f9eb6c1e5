"""An optional LLM simulated user: free-form answers to ASKs from hidden details.

The task's phases still decide everything they decide (phase delivery stays with
the triggers, in the protocol engine); this user only answers the questions no
phase answers, which the plain simulated user meets with a fixed "no further
information" reply.

Hidden details are what the person who set the task knows and did not say. Until
the task format has a field for them, they live in a sidecar file next to the
task: `<task-id>.hidden.md` (plain text). A task without one gets the fixed
reply, with no model call.

Answers are deterministic and cached: temperature 0 and a fixed seed, and every
answer is stored on disk under a hash of (task file, hidden details, model,
question, conversation so far). A rerun of the same episode reuses the same
answers without calling the endpoint, so batch results are reproducible.

Opt-in (`phrase_phases`), the same user also words the task's phase messages in
its own voice (`phrase_phases()`). Only the wording: which phase comes when is
still the triggers' decision. Each message is worded once per (task, phase,
model, seed), before the episode and without its conversation, so every agent
reads the same words, and cached like the answers. When the endpoint fails, or
the wording drops a number, file name or quoted text of the script, the
script's own text is used and the reason recorded.

Requests go through `app.endpoints.client`, with the model agent's retry policy and a
deadline per answer: an endpoint that stays down raises `UserUnavailable` (a batch
retries the episode), one that refuses the request or answers without text raises
`UserError` (it does not).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from app.core.conversation import Message
from app.core.errors import (
    AgentUnavailable,
    DeskLoopError,
    EndpointRefused,
    EndpointUnavailable,
    describe_error,
)
from app.core.vocabulary import Source, UserMode
from app.endpoints.cache import AnswerCache, answer_key
from app.endpoints.client import EndpointClient, EndpointConfig, message_text
from app.tasks.model import Task
from app.users.simulated import NO_FURTHER_INFORMATION

HIDDEN_SUFFIX = ".hidden.md"


class UserUnavailable(AgentUnavailable):
    """The LLM user's endpoint failed after its retries or past its deadline (an
    infrastructure error, which a batch retries)."""

    title = "User unavailable"
    kind = "user_unavailable"


class UserError(DeskLoopError):
    """The LLM user's endpoint refused the request, or answered without text: asking
    again would get the same, so a batch does not retry the episode."""

    title = "User error"
    kind = "user"


@dataclass(frozen=True)
class LLMUserConfig(EndpointConfig):
    """The endpoint's settings (`EndpointConfig`, shared with the model agent) plus the
    user's own."""

    # An answer is a sentence or two.
    max_tokens: int = 300
    phrase_phases: bool = False
    """Also word the task's phase messages (see `LLMUser.phrase_phases`)."""

    who: ClassVar[str] = "LLM user"
    model_option: ClassVar[str] = "--user-model"
    endpoint_name: ClassVar[str] = "LLM user endpoint"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LLMUserConfig:
        return cls(**data)


SYSTEM_PROMPT = """\
You are the person who asked an assistant to do a task on a computer. The assistant \
has asked you a question. Answer briefly, in one or two sentences, as that person, \
using only the task and the private details below and the conversation so far. Do not \
explain how to operate the software. If the details do not answer the question, reply \
exactly: {fallback}

The task you gave:
{instruction}

Private details only you know:
{hidden}
"""


PHRASE_PROMPT = """\
You are the person who asked an assistant to do a task on a computer. During the task \
you send the assistant the message below. Write it the way you would type it, in your \
own words, in one to three sentences. Keep every fact, number, name, file name and \
quoted text exactly as written; add nothing and leave nothing out. Reply with the \
message only.

The task you gave:
{instruction}

Private details only you know:
{hidden}
"""
# Bumped when PHRASE_PROMPT changes, so cached wordings of the old prompt are not reused.
PHRASE_PROMPT_VERSION = 1

# What a wording must keep word for word: quoted text, file names, numbers.
_KEPT = re.compile(
    # Not single quotes: they are apostrophes too ("don't ... it's").
    r"\"([^\"]+)\"|\u201c([^\u201d]+)\u201d|`([^`]+)`"
    r"|((?:~?/)?[\w/-]*[A-Za-z][\w/-]*\.[A-Za-z][A-Za-z0-9]{0,4})\b|(\d+(?:\.\d+)?)"
)


def lost_details(scripted: str, worded: str) -> list[str]:
    """Quoted text, file names and numbers of `scripted` that `worded` lacks."""
    kept = [next(g for g in m.groups() if g) for m in _KEPT.finditer(scripted)]
    return [item for item in dict.fromkeys(kept) if item not in worded]


@dataclass(frozen=True)
class PhaseWording:
    """How one phase message of an episode was worded, for its record."""

    phase: int
    scripted: str
    text: str
    source: Literal["model", "scripted"]
    reason: str | None = None
    """Why the script's text was kept (source 'scripted')."""

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def hidden_details(task: Task) -> str | None:
    """The task's hidden details (its `<id>.hidden.md` sidecar), or None."""
    path = Path(task.source).with_name(task.id + HIDDEN_SUFFIX)
    try:
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise DeskLoopError(f"{path}: cannot read the hidden details: {exc}") from None
    return text or None


class LLMUser:
    """A `User` that answers free questions through an OpenAI-compatible endpoint."""

    mode: UserMode = "simulated"
    reviews_done = False

    def __init__(
        self,
        task: Task,
        config: LLMUserConfig,
        *,
        cache_dir: Path,
        hidden: str | None = None,
    ) -> None:
        self.task = task
        self.config = config
        self.cache_dir = cache_dir
        self._cache = AnswerCache(cache_dir, "LLM user")
        self.hidden = hidden if hidden is not None else hidden_details(task)
        self._conversation: Callable[[], Sequence[Message]] = lambda: ()
        self.calls = 0
        """Requests made to the endpoint (cache hits make none)."""

    def bind_conversation(self, conversation: Callable[[], Sequence[Message]]) -> None:
        """Where to read the episode's conversation when a question comes."""
        self._conversation = conversation

    async def review(self) -> str | None:
        return None

    async def answer(self, question: str) -> tuple[str, Source]:
        if self.hidden is None:
            return NO_FURTHER_INFORMATION, "simulated"
        # The question itself is already the last message of the conversation.
        history: list[tuple[str, str, str]] = [
            (m.role, m.kind, m.text) for m in self._conversation()
        ]
        key = self._key(question, history)
        cached = await asyncio.to_thread(self._cache.read, key)
        if cached is not None:
            return cached, "simulated"
        text = await self._ask_model(question, history)
        entry = {"task": self.task.id, "model": self.config.model, "question": question}
        await asyncio.to_thread(self._cache.write, key, {**entry, "answer": text})
        return text, "simulated"

    async def phrase_phases(self) -> tuple[Task, list[PhaseWording]]:
        """The task with its phase messages in this user's words, and how each was
        worded. Never raises for the endpoint: a phase it cannot word keeps the
        script's text. Without `config.phrase_phases`: the task as it is, and []."""
        if not self.config.phrase_phases or not self.task.phases:
            return self.task, []
        wordings = [
            await self._phrase(index, phase.message) for index, phase in enumerate(self.task.phases)
        ]
        phases = [
            phase.model_copy(update={"message": wording.text})
            for phase, wording in zip(self.task.phases, wordings, strict=True)
        ]
        return self.task.model_copy(update={"phases": phases}), wordings

    async def _phrase(self, index: int, scripted: str) -> PhaseWording:
        key = self._phrase_key(index, scripted)
        try:
            text = await asyncio.to_thread(self._cache.read, key)
            if text is None:
                text = await self._complete(
                    PHRASE_PROMPT.format(
                        instruction=self.task.instruction.strip(),
                        hidden=self.hidden or "(none)",
                    ),
                    f"The message:\n{scripted}",
                )
                entry = {"task": self.task.id, "model": self.config.model, "phase": index}
                entry |= {"scripted": scripted, "answer": text}
                await asyncio.to_thread(self._cache.write, key, entry)
        except DeskLoopError as exc:
            # The phase still comes when its trigger holds; only the wording is lost.
            reason = describe_error(exc)
            return PhaseWording(index, scripted, scripted, "scripted", reason)
        lost = lost_details(scripted, text)
        if lost:
            reason = "the wording dropped " + ", ".join(repr(item) for item in lost)
            return PhaseWording(index, scripted, scripted, "scripted", reason)
        return PhaseWording(index, scripted, text, "model")

    def _phrase_key(self, index: int, scripted: str) -> str:
        return self._digest(
            purpose="phase",
            prompt=PHRASE_PROMPT_VERSION,
            phase=index,
            message=scripted,
        )

    def _key(self, question: str, history: list[tuple[str, str, str]]) -> str:
        return self._digest(question=question, conversation=history)

    def _digest(self, **request: Any) -> str:
        """The cache key of one request: what it asks, plus everything an answer
        depends on (the task, its hidden details and the model settings)."""
        material = {
            "task": self.task.id,
            "task_sha256": self.task.sha256,
            "hidden": self.hidden,
            "model": self.config.model,
            "temperature": self.config.temperature,
            "seed": self.config.seed,
            **request,
        }
        return answer_key(material)

    async def _ask_model(self, question: str, history: list[tuple[str, str, str]]) -> str:
        lines = [
            f"{'Me' if role == 'user' else 'Assistant'} ({kind}): {text}"
            for role, kind, text in history
        ]
        prompt = "Conversation so far:\n" + "\n".join(lines) + f"\n\nThe question: {question}"
        system = SYSTEM_PROMPT.format(
            fallback=NO_FURTHER_INFORMATION,
            instruction=self.task.instruction.strip(),
            hidden=self.hidden,
        )
        return await self._complete(system, prompt)

    async def _complete(self, system: str, prompt: str) -> str:
        """One chat completion through the shared client (its retries and deadline).

        Raises:
            UserUnavailable: the endpoint stayed unavailable.
            UserError: the endpoint refused the request or answered without text.
        """
        messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": prompt},
        ]
        async with EndpointClient(self.config) as client:
            try:
                completion = await client.complete(messages)
            except EndpointUnavailable as exc:
                raise UserUnavailable(exc.message) from exc
            except EndpointRefused as exc:
                raise UserError(exc.message) from exc
            finally:
                self.calls += client.requests
        choices = completion.data.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        message = choice.get("message") if isinstance(choice, dict) else None
        text = message_text(message.get("content")) if isinstance(message, dict) else None
        if text is None or not text.strip():
            raise UserError(f"{self.config.endpoint_name} {self.config.url} answered without text")
        return text.strip()
