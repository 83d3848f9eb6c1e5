"""Asking a model judge, for the `judge` checks of a check tree (app.checks.judge).

Scoring calls `ask_judges` after it gathered the files and before the checks run:
for each judge leaf it shows an OpenAI-compatible vision model (through the one
endpoint client, `app.endpoints`, with its retries and deadline) the rubric, the
final frame and the named image files, and parses the answer, a JSON object
`{"pass": bool, "score": 0..1, "reasons": "..."}`. The verdict goes into the check
state, and a `Judgement` (the messages with each image as its hash, the model, the
temperature, the seed, the raw answer and the verdict) goes to the store.

**Cache.** An answer is cached under the sha256 of what decides it: the model, its
sampling settings, the system prompt's version and the messages with each image
replaced by its hash. A rerun on the same final state asks nothing and gets the same
verdict; only usable answers are cached, so a malformed one is asked again.

**Failures.** A missing file, a file that is not an image, an answer with no verdict:
the check fails with the reason (the agent's result is what the judge could not see).
An endpoint that stays unavailable (or refuses the request), or no judge configured:
for a judge that does not count, the judgement records the error and the episode
goes on; for one that counts, the error is raised, and the episode ends as that error
(an infrastructure one for an unavailable endpoint), never as the agent's failure.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from app.checks.base import CheckState
from app.checks.judge import JudgeParams, judge_key
from app.checks.tree import CheckLeaf, EvalNode, leaves
from app.core.errors import DeskLoopError, EndpointRefused, EndpointUnavailable
from app.core.judgements import JudgedImage, Judgement, Verdict
from app.endpoints.cache import AnswerCache, answer_key
from app.endpoints.client import EndpointClient, EndpointConfig
from app.tasks.model import Task

JUDGE_CACHE = "judge-cache"
"""The cache's folder, beside the database."""
PROMPT_VERSION = 1
"""Bumped when SYSTEM_PROMPT changes, so answers to the old prompt are not reused."""

SYSTEM_PROMPT = """\
You judge a deliverable that an assistant made in desktop software (GIMP, Blender, \
Kdenlive). You are shown a rubric and one or more images: the final screen of the \
desktop and/or files the assistant produced. Judge only what the images show against \
the rubric; do not assume anything that is not visible. Answer with one JSON object \
and nothing else: {"pass": true or false, "score": a number from 0 to 1 (the share of \
the rubric met), "reasons": "one or two sentences naming what is met and what is not"}.\
"""

_MEDIA = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


class JudgeError(DeskLoopError):
    """A judge that counts could not be asked: none is configured."""

    title = "Judge not configured"
    kind = "other"


@dataclass(frozen=True)
class JudgeConfig(EndpointConfig):
    """The judge's endpoint (`EndpointConfig`: model, base URL, key, sampling, deadline)."""

    # A verdict is a line of JSON.
    max_tokens: int = 400

    who: ClassVar[str] = "judge"
    model_option: ClassVar[str] = "--judge-model"
    endpoint_name: ClassVar[str] = "judge endpoint"


@dataclass(frozen=True)
class JudgeContext:
    """What scoring needs to ask the judge, beside the check state."""

    config: JudgeConfig | None
    """None: no judge configured (a judge that counts then raises JudgeError)."""
    cache_dir: Path
    frame: Callable[[], Awaitable[bytes]] | None = None
    """The desktop's frame now, as PNG bytes (asked once, only if a judge shows it)."""


def media_type(data: bytes) -> str | None:
    for magic, kind in _MEDIA:
        if data.startswith(magic):
            return kind
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def parse_verdict(answer: str) -> Verdict:
    """The verdict in a model's answer: the JSON object in it (a ```json fence is
    allowed); ValueError naming what is wrong otherwise."""
    match = re.search(r"\{.*\}", answer, re.DOTALL)
    if match is None:
        raise ValueError("no JSON object in the answer")
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError as exc:
        raise ValueError(f"the answer's JSON does not parse ({exc.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("pass"), bool):
        raise ValueError('the answer has no "pass": true or false')
    score = data.get("score", 1.0 if data["pass"] else 0.0)
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1:
        raise ValueError(f'"score" must be a number from 0 to 1, got {score!r}')
    reasons = data.get("reasons", "")
    if not isinstance(reasons, str):
        reasons = json.dumps(reasons, ensure_ascii=False)
    return Verdict(passed=data["pass"], score=float(score), reasons=reasons.strip())


def _cut(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


class _Asker:
    """The judge leaves of one scoring: the frame taken once, one client."""

    def __init__(self, context: JudgeContext, state: CheckState, phase: int | None) -> None:
        self.context = context
        self.state = state
        self.phase = phase
        self._frame: bytes | None = None
        self._cache = AnswerCache(context.cache_dir, "judge")

    async def frame(self) -> bytes | None:
        if self._frame is None and self.context.frame is not None:
            self._frame = await self.context.frame()
        return self._frame

    async def images(self, params: JudgeParams) -> tuple[list[tuple[str, bytes, str]], str | None]:
        """(what, bytes, media type) of each image to show; or the problem."""
        shown: list[tuple[str, bytes, str]] = []
        if params.frame:
            frame = await self.frame()
            if frame is None:
                return [], "no final frame to show (the desktop gave none)"
            shown.append(("final frame", frame, "image/png"))
        for path in params.files:
            file = self.state.file(path)
            if file.data is None:
                missing = file.exists is False
                return [], f"{path} {'does not exist' if missing else f'unreadable: {file.error}'}"
            kind = media_type(file.data)
            if kind is None:
                return [], f"{path} is not a PNG, JPEG, GIF or WebP image"
            shown.append((path, file.data, kind))
        return shown, None

    async def ask(self, leaf: CheckLeaf, client: EndpointClient | None) -> Judgement:
        params = leaf.params
        assert isinstance(params, JudgeParams)
        config = self.context.config
        if config is None:
            if params.counts:
                raise JudgeError(
                    f"{leaf.path}: this judge counts toward the score, but no judge endpoint "
                    "is configured (--judge-model, --judge-base-url)"
                )
            config = JudgeConfig(model="(none)")
        images, problem = await self.images(params)
        listed = "\n".join(f"Image {i + 1}: {what}" for i, (what, _, _) in enumerate(images))
        text = f"Rubric:\n{params.rubric.strip()}\n\nImages, in order:\n{listed}"
        hashes = [
            JudgedImage(what, hashlib.sha256(data).hexdigest(), len(data), kind)
            for what, data, kind in images
        ]
        prompt: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": text},
                    *({"type": "image", "sha256": h.sha256, "what": h.what} for h in hashes),
                ],
            },
        ]
        key = request_key(config, prompt)
        base = Judgement(
            path=leaf.path,
            phase=self.phase,
            counts=params.counts,
            model=config.model,
            base_url=config.base_url,
            temperature=config.temperature,
            seed=config.seed,
            prompt=prompt,
            images=tuple(hashes),
            request_key=key,
            answer=None,
            verdict=None,
            cached=False,
        )
        if problem is not None:
            return replace(base, error=problem)
        if self.context.config is None:
            return replace(base, error="no judge endpoint is configured (--judge-model)")
        cached = await asyncio.to_thread(self._cache.read, key)
        if cached is not None:
            return replace(base, answer=cached, verdict=parse_verdict(cached), cached=True)
        assert client is not None
        sent = [
            prompt[0],
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": text},
                    *(
                        {
                            "type": "image_url",
                            "image_url": {
                                "url": f"data:{kind};base64,{base64.b64encode(data).decode()}"
                            },
                        }
                        for _, data, kind in images
                    ),
                ],
            },
        ]
        try:
            completion = await client.complete(sent)
        except (EndpointUnavailable, EndpointRefused) as exc:
            if params.counts:
                raise
            return replace(base, error=f"{exc.title}: {exc.message}")
        answer = _content(completion.data)
        try:
            verdict = parse_verdict(answer)
        except ValueError as exc:
            return replace(base, answer=answer, error=f"no verdict: {exc}: {_cut(answer)!r}")
        entry = {"request_key": key, "model": config.model, "prompt": prompt, "answer": answer}
        await asyncio.to_thread(self._cache.write, key, entry)
        return replace(base, answer=answer, verdict=verdict)


def request_key(config: EndpointConfig, prompt: list[dict[str, Any]]) -> str:
    """The cache key: everything the answer depends on, images as their hashes."""
    material = {
        "version": PROMPT_VERSION,
        "model": config.model,
        "temperature": config.temperature,
        "seed": config.seed,
        "max_tokens": config.max_tokens,
        "prompt": prompt,
    }
    return answer_key(material)


def _content(data: dict[str, Any]) -> str:
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return ""
    return content if isinstance(content, str) else ""


def judge_leaves(tree: EvalNode) -> list[CheckLeaf]:
    return [leaf for leaf in leaves(tree) if isinstance(leaf.params, JudgeParams)]


def check_judge_configured(task: Task, config: JudgeConfig | None) -> None:
    """JudgeError when a judge of `task` counts and `config` is None."""
    if config is not None:
        return
    trees = [task.eval_tree, *(p.checks for p in task.phases if p.checks is not None)]
    for tree in trees:
        for leaf in judge_leaves(tree):
            if isinstance(leaf.params, JudgeParams) and leaf.params.counts:
                raise JudgeError(
                    f"{task.id}: {leaf.path} is a judge that counts toward the score, and "
                    "no judge endpoint is configured (--judge-model, --judge-base-url)"
                )


async def ask_judges(
    tree: EvalNode, state: CheckState, context: JudgeContext | None, phase: int | None = None
) -> list[Judgement]:
    """Ask the judge for every judge leaf of `tree`, put each verdict in
    `state.judgements` and return the judgements to record (none without judges).

    Raises:
        JudgeError: a judge that counts, and no judge configured.
        EndpointUnavailable, EndpointRefused: for a judge that counts.
    """
    found = judge_leaves(tree)
    if not found:
        return []
    asker = _Asker(context or JudgeContext(None, Path(os.devnull)), state, phase)
    config = asker.context.config
    client = EndpointClient(config) if config is not None else None
    judgements = []
    try:
        for leaf in found:
            judgement = await asker.ask(leaf, client)
            assert isinstance(leaf.params, JudgeParams)
            state.judgements[judge_key(leaf.params)] = judgement
            judgements.append(judgement)
    finally:
        if client is not None:
            await client.aclose()
    return judgements
