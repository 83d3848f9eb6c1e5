"""The LLM user against a real local HTTP server: answers from hidden details,
deterministic requests, answers cached on disk, no call without hidden details."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

import pytest

from app.core.actions import Click, Done
from app.episode.protocol import PhaseSpec, Protocol
from app.tasks.loader import load_task
from app.tasks.model import Task
from app.users.llm import LLMUser, LLMUserConfig, UserUnavailable
from app.users.simulated import NO_FURTHER_INFORMATION
from tests.fake_openai import FakeEndpoint, error_reply, text_reply

TASK = """\
id: gimp-sized-poster
app: gimp
level: L1
title: Resize a poster
instruction: Make poster.png smaller and export it.
budget: {steps: 10, seconds: 60}
evaluate:
  all:
    - {check: file_exists, path: ~/Desktop/poster-small.png}
"""


def make_task(tmp_path: Path, hidden: str | None) -> Task:
    folder = tmp_path / "tasks" / "gimp"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gimp-sized-poster.yaml").write_text(textwrap.dedent(TASK))
    if hidden is not None:
        (folder / "gimp-sized-poster.hidden.md").write_text(hidden)
    return load_task(folder / "gimp-sized-poster.yaml")


def user_for(task: Task, endpoint: FakeEndpoint, cache: Path, protocol: Protocol) -> LLMUser:
    config = LLMUserConfig(model="fake-user", base_url=endpoint.base_url, backoff=0.01)
    user = LLMUser(task, config, cache_dir=cache)
    user.bind_conversation(lambda: protocol.conversation)
    return user


async def test_answers_from_hidden_details_and_reuses_the_cache(tmp_path: Path) -> None:
    task = make_task(tmp_path, "The poster must be exactly 400 pixels wide.")
    cache = tmp_path / "cache"
    protocol = Protocol(task.instruction, [], max_steps=10, max_seconds=60)
    with FakeEndpoint([text_reply("400 pixels wide, please."), text_reply("JPEG.")]) as endpoint:
        user = user_for(task, endpoint, cache, protocol)
        answer = await user.answer("How wide?")
        assert answer == ("400 pixels wide, please.", "simulated")
        request = endpoint.received[0].body
        assert request["temperature"] == 0.0 and request["seed"] == 0
        assert "exactly 400 pixels wide" in request["messages"][0]["content"]
        assert "How wide?" in request["messages"][1]["content"]

        # The same episode again (a fresh user, same conversation): the cache answers.
        again = user_for(task, endpoint, cache, protocol)
        assert await again.answer("How wide?") == answer
        assert again.calls == 0 and len(endpoint.received) == 1

        # A different conversation is a different question.
        protocol.inject("Use the blue version.", "clarification")
        assert (await again.answer("How wide?"))[0] == "JPEG."
        assert len(endpoint.received) == 2


async def test_no_hidden_details_means_the_fixed_reply(tmp_path: Path) -> None:
    task = make_task(tmp_path, None)
    protocol = Protocol(task.instruction, [], max_steps=10, max_seconds=60)
    with FakeEndpoint([]) as endpoint:
        user = user_for(task, endpoint, tmp_path / "cache", protocol)
        assert await user.answer("How wide?") == (NO_FURTHER_INFORMATION, "simulated")
    assert endpoint.received == []


async def test_an_endpoint_that_stays_down_is_an_infrastructure_error(tmp_path: Path) -> None:
    task = make_task(tmp_path, "400 wide.")
    protocol = Protocol(task.instruction, [], max_steps=10, max_seconds=60)
    with FakeEndpoint([error_reply(503)] * 4) as endpoint:
        user = user_for(task, endpoint, tmp_path / "cache", protocol)
        with pytest.raises(UserUnavailable, match="after 3 retries"):
            await user.answer("How wide?")
    assert len(endpoint.received) == 4
    assert not any((tmp_path / "cache").rglob("*.json"))  # failures are not cached


# -- phase messages in the LLM user's words (opt-in) -----------------------------------

PHASED_TASK = """\
id: gimp-phased-poster
app: gimp
level: L2
title: Resize a poster, then change course
instruction: Make poster.png smaller and export it.
phases:
  - message: Make it 400 pixels wide.
    trigger: {step_count: 1}
  - message: Export it as "poster small" to poster-small.jpg instead.
    trigger: agent_done
budget: {steps: 10, seconds: 60}
evaluate:
  all:
    - {check: file_exists, path: ~/Desktop/poster-small.jpg}
"""


def make_phased_task(tmp_path: Path, text: str = PHASED_TASK) -> Task:
    folder = tmp_path / "tasks" / "gimp"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gimp-phased-poster.yaml").write_text(text)
    (folder / "gimp-phased-poster.hidden.md").write_text("It is for the lobby screen.")
    return load_task(folder / "gimp-phased-poster.yaml")


def phrasing_user(task: Task, endpoint: FakeEndpoint, cache: Path, *, on: bool = True) -> LLMUser:
    config = LLMUserConfig(
        model="fake-user", base_url=endpoint.base_url, backoff=0.01, phrase_phases=on
    )
    return LLMUser(task, config, cache_dir=cache)


def play(task: Task) -> list[tuple[int, str, str, int | None]]:
    """The same agent turns through the protocol engine: (step, kind, text, phase)."""
    protocol = Protocol(
        task.instruction,
        [PhaseSpec(p.message, p.trigger, p.kind) for p in task.phases],
        max_steps=task.budget.steps,
        max_seconds=task.budget.seconds,
    )
    for action in (Click(1, 1), Done(), Click(2, 2), Done()):
        protocol.on_agent(action, 1.0)
    return [(m.step, m.kind, m.text, m.phase_index) for m in protocol.conversation]


WORDED = [
    "Oh, and could you make it 400 pixels wide?",
    'Change of plan: save it as "poster small", file poster-small.jpg, please.',
]


async def test_phase_messages_are_worded_once_and_delivered_by_their_triggers(
    tmp_path: Path,
) -> None:
    task = make_phased_task(tmp_path)
    cache = tmp_path / "cache"
    with FakeEndpoint([text_reply(text) for text in WORDED]) as endpoint:
        worded, wordings = await phrasing_user(task, endpoint, cache).phrase_phases()
        assert [p.message for p in worded.phases] == WORDED
        assert [(w.source, w.scripted) for w in wordings] == [
            ("model", p.message) for p in task.phases
        ]
        for received, phase in zip(endpoint.received, task.phases, strict=True):
            assert received.body["temperature"] == 0.0 and received.body["seed"] == 0
            assert "lobby screen" in received.body["messages"][0]["content"]
            assert phase.message in received.body["messages"][1]["content"]
        # A rerun of the episode: the same words, from the cache.
        again = phrasing_user(task, endpoint, cache)
        assert (await again.phrase_phases())[0].phases == worded.phases
        assert again.calls == 0 and len(endpoint.received) == 2

    # Only the words differ: the same phases arrive at the same turns, as the same kinds.
    scripted, phrased = play(task), play(worded)
    assert [(s, k, p) for s, k, _, p in scripted] == [(s, k, p) for s, k, _, p in phrased]
    delivered = [text for _, _, text, phase in phrased if phase is not None]
    assert delivered == WORDED
    # The task itself is untouched: same file, same hash, same triggers.
    assert worded.sha256 == task.sha256 and worded.phases[1].trigger is task.phases[1].trigger


async def test_the_script_stands_in_when_the_endpoint_fails_or_a_detail_is_lost(
    tmp_path: Path,
) -> None:
    task = make_phased_task(tmp_path)
    cache = tmp_path / "cache"
    with FakeEndpoint([error_reply(503)] * 4 + [text_reply("Bigger, please.")]) as endpoint:
        worded, wordings = await phrasing_user(task, endpoint, cache).phrase_phases()
    assert [p.message for p in worded.phases] == [p.message for p in task.phases]
    first, second = wordings
    assert first.source == "scripted" and first.text == task.phases[0].message
    assert first.reason is not None and first.reason.startswith("User unavailable:")
    assert "after 3 retries" in first.reason
    # The model answered the second, but dropped the file name and the quoted text.
    assert second.source == "scripted"
    assert second.reason == "the wording dropped 'poster small', 'poster-small.jpg'"
    assert len(endpoint.received) == 5


async def test_without_the_option_phases_keep_the_script(tmp_path: Path) -> None:
    task = make_phased_task(tmp_path)
    with FakeEndpoint([]) as endpoint:
        user = phrasing_user(task, endpoint, tmp_path / "cache", on=False)
        same, wordings = await user.phrase_phases()
    assert same is task and wordings == [] and endpoint.received == []


async def test_a_batch_records_the_worded_phases(tmp_path: Path) -> None:
    from app.batch import BatchOptions, start_batch
    from app.store import Store
    from tests.batch.test_batch_pool import World

    # Both phases answer a DONE, so the null agent (DONE at once) meets both.
    task = make_phased_task(tmp_path, PHASED_TASK.replace("{step_count: 1}", "agent_done"))
    store = Store(tmp_path / "db.sqlite")
    with FakeEndpoint([text_reply(WORDED[0]), error_reply(400)]) as endpoint:
        options = BatchOptions(
            user="llm",
            llm_user={"model": "fake-user", "base_url": endpoint.base_url, "phrase_phases": True},
        )
        runner = start_batch(
            store,
            [task],
            ["null"],
            1,
            options,
            desktop_factory=World().factory,
            progress_stream=io.StringIO(),
        )
        (row,) = await runner.run()
    assert row.status == "finished" and row.episode is not None
    # The second phase keeps the script's words: the endpoint refused that request.
    phase_messages = [m.text for m in store.messages(row.episode.id) if m.source == "phase"]
    assert phase_messages == [WORDED[0], task.phases[1].message]
    recorded = row.episode.config["phase_wording"]
    assert [(w["phase"], w["source"], w["text"]) for w in recorded] == [
        (0, "model", WORDED[0]),
        (1, "scripted", task.phases[1].message),
    ]
    assert "refused the request: HTTP 400" in recorded[1]["reason"]
    assert [p.message for p in store.phases(row.episode.id)] == [WORDED[0], task.phases[1].message]
    store.close()
