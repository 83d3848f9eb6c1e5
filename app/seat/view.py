"""What the participant's page shows now, and what they may do on it.

The page is one at a time (`Page`): consent, a trial's brief, the trial, a
questionnaire, a break, a plain "please wait", the end. The browser polls `state()`
and posts actions to `act()`; an action names the page it was made on (`number`), so
a click on a page that has gone (a double click, a tab left open) does nothing. The
seat awaits what the participant decides with `ask()`.

Pure asyncio and plain data: the web layer (`app.seat.web`) only carries JSON to and
from here, so every rule of the page is tested without a browser.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from app.studies.instruments import AnswerValue, Instrument, Item, answer_problems

PageKind = Literal["waiting", "consent", "brief", "trial", "questionnaire", "break", "end"]

TEXT_LIMIT = 5000
"""The most characters one typed answer or message may have (a page is no upload)."""


class Refused(ValueError):
    """An action the page does not take now; its message is for the participant."""

    def __init__(self, message: str, problems: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.problems: dict[str, str] = dict(problems or {})
        """Per questionnaire item: why its answer is no answer."""


Handler = Callable[[Mapping[str, Any]], Any]
"""Takes a posted action; returns what the seat awaits (ends the page), or None to
stay; raises Refused."""


@dataclass
class Page:
    kind: PageKind
    number: int
    content: dict[str, Any]
    handle: Handler | None = None
    live: Callable[[], Awaitable[dict[str, Any]]] | None = None
    """Content that changes while the page is shown (a trial's conversation)."""
    reply: asyncio.Future[Any] | None = field(default=None, repr=False)


class SeatView:
    """The participant's current page (see the module docstring)."""

    def __init__(self) -> None:
        self.page = Page("waiting", 0, {"text": "Please wait: the session is being prepared."})
        self.served = 0
        """The number of the newest page the browser has been sent."""
        self._served = asyncio.Event()

    def show(
        self,
        kind: PageKind,
        content: dict[str, Any],
        *,
        handle: Handler | None = None,
        live: Callable[[], Awaitable[dict[str, Any]]] | None = None,
    ) -> Page:
        """Show a page that awaits nothing (or whose `handle` the caller watches)."""
        old = self.page
        if old.reply is not None and not old.reply.done():
            old.reply.cancel()
        self.page = Page(kind, old.number + 1, content, handle, live)
        return self.page

    def wait(self, text: str) -> None:
        self.show("waiting", {"text": text})

    async def ask(self, kind: PageKind, content: dict[str, Any], handle: Handler) -> Any:
        """Show a page and wait for the first action `handle` turns into a value."""
        page = self.show(kind, content, handle=handle)
        page.reply = asyncio.get_running_loop().create_future()
        return await page.reply

    async def state(self) -> dict[str, Any]:
        page = self.page
        live = await page.live() if page.live is not None else {}
        self.served = max(self.served, page.number)
        self._served.set()
        return {"page": page.kind, "number": page.number, **page.content, **live}

    async def wait_served(self) -> None:
        """Until the browser is next sent a state."""
        self._served.clear()
        await self._served.wait()

    def act(self, number: object, action: Mapping[str, Any]) -> None:
        """The participant's action on page `number`.

        Raises:
            Refused: an old page, a page that takes no action, or an action it refuses.
        """
        page = self.page
        if number != page.number:
            raise Refused("this page has changed; here is the current one")
        if page.handle is None:
            raise Refused("there is nothing to do on this page")
        try:
            value = page.handle(action)
        except Refused:
            raise
        except ValueError as exc:  # the episode moved on meanwhile (an ASK answered)
            raise Refused(str(exc)) from None
        if value is not None and page.reply is not None and not page.reply.done():
            page.reply.set_result(value)


def consent_handler(action: Mapping[str, Any]) -> bool:
    agree = action.get("agree")
    if not isinstance(agree, bool):
        raise Refused("choose I agree or I do not agree")
    return agree


def item_view(item: Item) -> dict[str, Any]:
    """An item as the page renders it."""
    view: dict[str, Any] = {"id": item.id, "kind": item.kind, "prompt": item.prompt}
    view["required"] = item.required
    if item.kind in ("scale", "likert"):
        count = int((item.high - item.low) / item.step) + 1
        view["points"] = [item.low + n * item.step for n in range(count)]
        view["anchors"] = list(item.anchors)
    elif item.kind == "number":
        view["min"] = None if math.isinf(item.low) else item.low
        view["max"] = None if math.isinf(item.high) else item.high
        view["unit"] = item.unit
    elif item.kind in ("choice", "multiple"):
        view["options"] = list(item.options)
    return view


def instrument_view(instrument: Instrument) -> dict[str, Any]:
    return {
        "instrument": instrument.id,
        "title": instrument.title,
        "items": [item_view(item) for item in instrument.items],
    }


def read_answers(
    instrument: Instrument, posted: object
) -> tuple[dict[str, AnswerValue], dict[str, str]]:
    """The posted answers as the instrument's values, and per item why an answer is
    none (a required item left empty, a number out of range, an unknown option).
    An empty text or number field is no answer (None)."""
    if not isinstance(posted, Mapping):
        return {}, {"": "answers must be an object of item ids"}
    answers: dict[str, AnswerValue] = {}
    problems: dict[str, str] = {}
    for key, raw in posted.items():
        item = instrument.item(str(key))
        if item is None:
            problems[str(key)] = f"not an item of {instrument.id}"
            continue
        value, why = _value(item, raw)
        if why is not None:
            problems[item.id] = why
        else:
            answers[item.id] = value
    for problem in answer_problems(instrument, answers):
        key, _, why = problem.partition(": ")
        problems.setdefault(key, why)
    return answers, problems


def _value(item: Item, raw: object) -> tuple[AnswerValue, str | None]:
    """A posted value as the item's kind of value (strings from a form's fields)."""
    if raw is None or raw == "" or raw == []:
        return None, None
    if item.kind in ("scale", "likert", "number"):
        if isinstance(raw, str):
            try:
                raw = float(raw)
            except ValueError:
                return None, "expected a number"
        if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
            return None, "expected a number"
        return (int(raw) if float(raw).is_integer() else float(raw)), None
    if item.kind == "multiple":
        if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
            return None, "expected a list of options"
        return list(raw), None
    if not isinstance(raw, str):
        return None, "expected text"
    if len(raw) > TEXT_LIMIT:
        return None, f"at most {TEXT_LIMIT} characters"
    return (raw.strip() or None), None


def answers_handler(instrument: Instrument) -> Handler:
    """Takes a posted questionnaire: its answers once every one is an answer."""

    def handle(action: Mapping[str, Any]) -> dict[str, AnswerValue]:
        answers, problems = read_answers(instrument, action.get("answers"))
        if problems:
            raise Refused("some answers need your attention", problems)
        return answers

    return handle


def go_on_handler(action: Mapping[str, Any]) -> bool:
    """A brief's Start, a break's Continue."""
    if action.get("do") != "continue":
        raise Refused("press Continue when you are ready")
    return True
