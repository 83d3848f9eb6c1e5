"""The `judge` check's own logic, without a desktop: what a tree makes of a judge that
counts and one that does not, what the check reads, how answers parse, the cache, and
what an unavailable endpoint does (a real local HTTP endpoint, tests/fake_openai.py).
The judge on a real desktop's final frame and files is tests/episode/test_judge_desktop.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.checks import CheckState, FileState, evaluate, parse_tree, run_check
from app.checks.judge import JudgeParams, judge_key
from app.checks.tree import CheckLeaf, EvalNode, TreeError, leaves
from app.core.errors import EndpointUnavailable
from app.core.judgements import Judgement, Verdict
from app.episode.judge import (
    JudgeConfig,
    JudgeContext,
    JudgeError,
    ask_judges,
    parse_verdict,
)
from tests.fake_openai import FakeEndpoint, error_reply, text_reply

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
RUBRIC = "The poster's title is legible."


def tree(counts: bool) -> object:
    return {
        "all": [
            {"check": "file_exists", "path": "~/out.png"},
            {
                "check": "judge",
                "rubric": RUBRIC,
                "frame": False,
                "files": ["~/out.png"],
                "counts": counts,
            },
        ]
    }


def judged(params: JudgeParams, verdict: Verdict | None, error: str | None = None) -> Judgement:
    return Judgement(
        path="evaluate.all[1]",
        phase=None,
        counts=params.counts,
        model="m",
        base_url="http://x/v1",
        temperature=0.0,
        seed=0,
        prompt=[],
        images=(),
        request_key="k",
        answer=None,
        verdict=verdict,
        cached=False,
        error=error,
    )


def state_with(node: object, verdict: Verdict | None, error: str | None = None) -> CheckState:
    parsed = parse_tree(node)
    (leaf,) = [x for x in leaves(parsed) if x.spec.name == "judge"]
    assert isinstance(leaf.params, JudgeParams)
    state = CheckState(files={"~/out.png": FileState.found("~/out.png", PNG)}, assets={})
    state.judgements[judge_key(leaf.params)] = judged(leaf.params, verdict, error)
    return state


def score(node: object, state: CheckState) -> tuple[bool, float]:
    parsed = parse_tree(node)
    results = {leaf.path: run_check(leaf.spec, state, leaf.params) for leaf in leaves(parsed)}
    outcome = evaluate(parsed, results)
    return outcome.passed, outcome.score


def test_a_judge_that_does_not_count_changes_neither_pass_nor_credit() -> None:
    failing = Verdict(passed=False, score=0.2, reasons="The title is cut off.")
    state = state_with(tree(False), failing)
    assert score(tree(False), state) == (True, 1.0)
    # Its own result is still there, with the model's reasons.
    leaf = next(x for x in leaves(parse_tree(tree(False))) if x.spec.name == "judge")
    result = run_check(leaf.spec, state, leaf.params)
    assert not result.passed and result.score == 0.2 and "The title is cut off." in result.evidence


def test_a_judge_that_counts_decides_like_any_check() -> None:
    failing = Verdict(passed=False, score=0.2, reasons="The title is cut off.")
    # (1 + 0.2) / 2 and (1 + 0.9) / 2: the judge's credit weighs like any leaf's.
    assert score(tree(True), state_with(tree(True), failing)) == pytest.approx((False, 0.6))
    passing = Verdict(passed=True, score=0.9, reasons="Legible.")
    assert score(tree(True), state_with(tree(True), passing)) == pytest.approx((True, 0.95))


def test_a_tree_needs_a_check_that_decides() -> None:
    with pytest.raises(TreeError, match=r"evaluate.counts: a judge that does not count"):
        parse_tree({"check": "judge", "rubric": RUBRIC})
    with pytest.raises(TreeError, match=r"evaluate.all\[0\].any: every check here is a judge"):
        parse_tree({"all": [{"any": [{"check": "judge", "rubric": RUBRIC}]}]})
    # A judge that counts may be the whole tree.
    assert isinstance(parse_tree({"check": "judge", "rubric": RUBRIC, "counts": True}), CheckLeaf)
    with pytest.raises(TreeError, match=r"a judge needs something to look at"):
        parse_tree({"all": [{"check": "judge", "rubric": RUBRIC, "frame": False}]})
    with pytest.raises(TreeError, match=r"evaluate.files\[0\]: .*guest path"):
        parse_tree({"check": "judge", "rubric": RUBRIC, "counts": True, "files": ["out.png"]})


def test_the_check_says_why_it_has_no_verdict() -> None:
    leaf = next(x for x in leaves(parse_tree(tree(False))) if x.spec.name == "judge")
    empty = CheckState(files={}, assets={})
    result = run_check(leaf.spec, empty, leaf.params)
    assert not result.passed and "no judge endpoint was configured" in result.evidence
    state = state_with(tree(False), None, "~/out.png does not exist")
    result = run_check(leaf.spec, state, leaf.params)
    assert not result.passed and result.evidence == "judge m: ~/out.png does not exist"


def test_answers_parse_or_say_what_is_wrong() -> None:
    assert parse_verdict('```json\n{"pass": true, "score": 0.8, "reasons": "ok"}\n```') == Verdict(
        True, 0.8, "ok"
    )
    assert parse_verdict('{"pass": false}') == Verdict(False, 0.0, "")
    for bad, why in [
        ("It looks fine.", "no JSON object"),
        ('{"pass": "yes"}', '"pass"'),
        ('{"pass": true, "score": 7}', '"score" must be a number from 0 to 1'),
        ('{"pass": true,}', "does not parse"),
    ]:
        with pytest.raises(ValueError, match=why):
            parse_verdict(bad)


def judge_state(counts: bool) -> tuple[EvalNode, CheckState]:
    parsed = parse_tree(tree(counts))
    state = CheckState(files={"~/out.png": FileState.found("~/out.png", PNG)}, assets={})
    return parsed, state


async def test_answers_are_cached_by_the_request(tmp_path: Path) -> None:
    answer = '{"pass": true, "score": 0.9, "reasons": "Legible."}'
    with FakeEndpoint([text_reply(answer)]) as endpoint:
        config = JudgeConfig(model="fake-vision-1", base_url=endpoint.base_url)
        context = JudgeContext(config, tmp_path / "cache")
        parsed, state = judge_state(False)
        (first,) = await ask_judges(parsed, state, context)
        parsed, again = judge_state(False)
        (second,) = await ask_judges(parsed, again, context)
        assert len(endpoint.received) == 1  # the second came from the cache
        sent = endpoint.received[0].body
    assert (first.cached, second.cached) == (False, True)
    assert first.verdict == second.verdict == Verdict(True, 0.9, "Legible.")
    assert first.request_key == second.request_key
    assert sent["model"] == "fake-vision-1" and sent["temperature"] == 0.0 and sent["seed"] == 0
    image = sent["messages"][1]["content"][1]
    assert image["type"] == "image_url" and image["image_url"]["url"].startswith(
        "data:image/png;base64,"
    )
    # The recorded prompt names the image by its hash, never carries its bytes.
    assert "base64" not in json.dumps(first.prompt)
    assert first.prompt[1]["content"][1]["what"] == "~/out.png"


async def test_an_unavailable_endpoint_is_recorded_or_raised(tmp_path: Path) -> None:
    with FakeEndpoint([error_reply(503)] * 4) as endpoint:
        config = JudgeConfig(
            model="m", base_url=endpoint.base_url, max_retries=1, backoff=0.0, deadline=10
        )
        context = JudgeContext(config, tmp_path / "cache")
        parsed, state = judge_state(False)
        (recorded,) = await ask_judges(parsed, state, context)
        assert recorded.verdict is None and "Endpoint unavailable" in (recorded.error or "")
        # One that counts ends the episode as the infrastructure error it met.
        parsed, state = judge_state(True)
        with pytest.raises(EndpointUnavailable):
            await ask_judges(parsed, state, context)
    # Nothing was cached: a rerun asks again.
    assert not (tmp_path / "cache").exists()
    parsed, state = judge_state(True)
    with pytest.raises(JudgeError, match=r"evaluate.all\[1\]: this judge counts"):
        await ask_judges(parsed, state, JudgeContext(None, tmp_path / "cache"))


COUNTING_TASK = """\
id: judged-poster
app: gimp
level: L1
title: A judged poster
instruction: Make a poster.
setup: []
evaluate:
  all:
    - {check: file_exists, path: ~/poster.png}
    - {check: judge, rubric: "A legible poster.", counts: true}
"""


def test_a_judge_that_counts_needs_a_judge_before_the_episode_starts(tmp_path: Path) -> None:
    from app.episode.launch import launch
    from app.store import Store
    from app.tasks.loader import load_task

    folder = tmp_path / "tasks" / "gimp"
    folder.mkdir(parents=True)
    (folder / "judged-poster.yaml").write_text(COUNTING_TASK)
    task = load_task(folder / "judged-poster.yaml")
    with Store.memory() as store:
        with pytest.raises(JudgeError, match=r"judged-poster: evaluate.all\[1\] is a judge that"):
            launch(task, store, backend="local", agent="null")
        assert store.list_episodes() == []  # refused before anything was recorded
