"""The evaluate tree: parsing with field paths, and how results combine."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from app.checks import (
    CheckGroup,
    CheckLeaf,
    CheckResult,
    EvalNode,
    TreeError,
    evaluate,
    leaves,
    parse_tree,
    tree_assets,
    tree_files,
)
from app.core.errors import StoreError, TaskError
from tests.check_outcomes import outcome

PASS = CheckResult(True, 1.0, "ok")
FAIL = CheckResult(False, 0.0, "no")


def leaf(path: str = "~/a.png", **extra: Any) -> dict[str, Any]:
    return {"check": "file_exists", "path": path, **extra}


# --- parsing ------------------------------------------------------------------------


def test_the_design_example_parses() -> None:
    raw = yaml.safe_load(
        """
        all:
          - {check: image_size, path: ~/Desktop/poster-small.png, width: 400, weight: 2}
          - {check: file_exists, path: ~/Desktop/poster-small.jpg}
        """
    )
    root = parse_tree(raw)
    assert isinstance(root, CheckGroup) and root.op == "all"
    first, second = root.children
    assert isinstance(first, CheckLeaf) and isinstance(second, CheckLeaf)
    assert (first.path, first.spec.name, first.weight, first.required) == (
        "evaluate.all[0]",
        "image_size",
        2.0,
        True,
    )
    assert first.params.model_dump()["width"] == 400
    assert (second.path, second.weight, second.label) == ("evaluate.all[1]", 1.0, None)


def test_paths_follow_nesting_and_a_custom_prefix() -> None:
    raw = {"all": [leaf(), {"any": [leaf(), leaf(label="b")], "label": "either"}]}
    root = parse_tree(raw, path="tasks.x.evaluate")
    assert [n.path for n in leaves(root)] == [
        "tasks.x.evaluate.all[0]",
        "tasks.x.evaluate.all[1].any[0]",
        "tasks.x.evaluate.all[1].any[1]",
    ]
    assert [n.label for n in leaves(root)] == [None, None, "b"]


def test_a_single_leaf_is_a_tree() -> None:
    root = parse_tree(leaf())
    assert isinstance(root, CheckLeaf) and root.path == "evaluate"


def test_tree_files_and_assets_are_deduplicated_in_order() -> None:
    raw = {
        "all": [
            leaf("~/b.png"),
            {"check": "image_similarity", "path": "~/a.png", "reference": "assets/r.png"},
            leaf("~/b.png"),
            {"check": "image_similarity", "path": "~/b.png", "reference": "assets/r.png"},
        ]
    }
    root = parse_tree(raw)
    assert tree_files(root) == ["~/b.png", "~/a.png"]
    assert tree_assets(root) == ["assets/r.png"]


@pytest.mark.parametrize(
    ("raw", "field_path", "message"),
    [
        ([leaf()], "evaluate", "expected a mapping"),
        ({}, "evaluate", "expected exactly one of 'all', 'any' or 'check'"),
        ({"all": [leaf()], "check": "file_exists"}, "evaluate", "has both 'all' and 'check'"),
        ({"all": []}, "evaluate.all", "non-empty list"),
        ({"any": leaf()}, "evaluate.any", "non-empty list"),
        ({"all": [leaf()], "lable": "x"}, "evaluate.lable", "did you mean 'label'?"),
        ({"all": [leaf(weight=0)]}, "evaluate.all[0].weight", "a number > 0"),
        ({"all": [leaf(weight=True)]}, "evaluate.all[0].weight", "a number > 0"),
        ({"all": [leaf(weight=float("inf"))]}, "evaluate.all[0].weight", "a number > 0"),
        ({"all": [leaf(required="yes")]}, "evaluate.all[0].required", "true or false"),
        ({"all": [leaf(label="")]}, "evaluate.all[0].label", "non-empty string"),
        (leaf(weight=2), "evaluate.weight", "no effect on the root"),
        ({"all": [leaf()], "required": False}, "evaluate.required", "no effect on the root"),
        (
            {"any": [leaf(), leaf(required=False)]},
            "evaluate.any[1].required",
            "no effect on a child of an 'any' group",
        ),
        ({"any": [leaf(weight=3)]}, "evaluate.any[0].weight", "no effect"),
        (
            {"all": [{"check": "file_exist", "path": "~/a"}]},
            "evaluate.all[0].check",
            "did you mean 'file_exists'",
        ),
        ({"all": [{"check": 3}]}, "evaluate.all[0].check", "expected a check name"),
        (
            {"all": [{"check": "file_exists"}]},
            "evaluate.all[0].path",
            "file_exists needs this parameter",
        ),
        (
            {"all": [leaf(), {"check": "image_size", "path": "~/a", "width": "wide"}]},
            "evaluate.all[1].width",
            "valid integer",
        ),
        (
            {"all": [{"check": "image_size", "path": "~/a"}]},
            "evaluate.all[0]",
            "give width, height or both",
        ),
        (
            {"all": [leaf(wieght=2)]},
            "evaluate.all[0].wieght",
            "unknown parameter of file_exists (did you mean 'weight'?)",
        ),
        (
            {
                "all": [
                    {
                        "check": "pixel_color",
                        "path": "~/a",
                        "region": [0, 0, -4, 1],
                        "color": "#ffffff",
                    }
                ]
            },
            "evaluate.all[0].region[2]",
            "greater than 0",
        ),
        ({"all": [leaf("relative.png")]}, "evaluate.all[0].path", "must start with '/' or '~/'"),
        (
            {"check": "pixel_color", "path": "~/a", "region": [0, 0, 5], "color": "#000000"},
            "evaluate.region[3]",
            "too few items",
        ),
        (
            {"check": "image_mode", "path": "~/a", "mode": "RGB", "format": "JPG"},
            "evaluate.format",
            "did you mean 'JPEG'?",
        ),
    ],
)
def test_tree_errors_name_the_field_and_what_was_expected(
    raw: object, field_path: str, message: str
) -> None:
    with pytest.raises(TreeError) as caught:
        parse_tree(raw)
    assert caught.value.field_path == field_path
    assert message in caught.value.detail
    assert str(caught.value).startswith(f"{field_path}: ")
    assert isinstance(caught.value, TaskError)


def test_several_parameter_errors_are_all_reported() -> None:
    raw = {"check": "image_size", "path": "x", "width": 0}
    with pytest.raises(TreeError) as caught:
        parse_tree(raw)
    assert caught.value.field_path == "evaluate.path"
    assert "also evaluate.width: " in caught.value.detail


# --- evaluation examples ------------------------------------------------------------


def test_all_passes_when_required_children_pass_and_optional_ones_only_cost_credit() -> None:
    root = parse_tree({"all": [leaf(weight=3), leaf(required=False)]})
    result = evaluate(root, {"evaluate.all[0]": PASS, "evaluate.all[1]": FAIL})
    assert result.passed
    assert result.score == pytest.approx(0.75)
    assert [o.result for o in result.leaves] == [PASS, FAIL]
    assert [o.required for o in result.leaves] == [True, False]


def test_all_fails_when_a_required_child_fails() -> None:
    root = parse_tree({"all": [leaf(), leaf(weight=4, required=False)]})
    result = evaluate(root, {"evaluate.all[0]": FAIL, "evaluate.all[1]": PASS})
    assert not result.passed
    assert result.score == pytest.approx(0.8)


def test_any_passes_on_one_child_and_scores_the_best() -> None:
    root = parse_tree({"any": [leaf(), leaf()]})
    partial = CheckResult(False, 0.4, "close")
    result = evaluate(root, {"evaluate.any[0]": partial, "evaluate.any[1]": FAIL})
    assert not result.passed and result.score == pytest.approx(0.4)
    result = evaluate(root, {"evaluate.any[0]": partial, "evaluate.any[1]": PASS})
    assert result.passed and result.score == 1.0


def test_nested_groups_combine_by_weight() -> None:
    root = parse_tree({"all": [leaf(), {"any": [leaf(), leaf()], "weight": 3, "required": False}]})
    results = {
        "evaluate.all[0]": PASS,
        "evaluate.all[1].any[0]": CheckResult(False, 0.5, "half"),
        "evaluate.all[1].any[1]": FAIL,
    }
    result = evaluate(root, results)
    assert result.passed
    assert result.score == pytest.approx((1 * 1.0 + 3 * 0.5) / 4)


def test_a_leaf_without_a_result_counts_as_failed() -> None:
    root = parse_tree({"all": [leaf(), leaf()]})
    result = evaluate(root, {"evaluate.all[0]": PASS})
    assert not result.passed
    assert result.leaves[1].result.evidence == "file_exists at evaluate.all[1] was not run"


# --- properties ---------------------------------------------------------------------


@st.composite
def raw_trees(draw: st.DrawFn, context: str = "root", depth: int = 3) -> dict[str, Any]:
    node: dict[str, Any]
    if depth == 0 or draw(st.booleans()):
        node = leaf(f"~/f{draw(st.integers(0, 3))}.png")
    else:
        op = draw(st.sampled_from(["all", "any"]))
        count = draw(st.integers(1, 4))
        node = {op: [draw(raw_trees(op, depth - 1)) for _ in range(count)]}
    if context == "all":
        if draw(st.booleans()):
            node["weight"] = draw(st.floats(0.001, 1000))
        if draw(st.booleans()):
            node["required"] = draw(st.booleans())
    return node


def all_roots() -> st.SearchStrategy[dict[str, Any]]:
    return st.lists(raw_trees("all", 2), min_size=1, max_size=5).map(lambda c: {"all": c})


results_strategy = st.builds(
    CheckResult,
    passed=st.booleans(),
    score=st.floats(0.0, 1.0),
    evidence=st.just("drawn"),
)


def must_pass(node: EvalNode) -> Iterator[CheckLeaf]:
    """Leaves whose failure must fail `node`: reached only through required `all` children."""
    if isinstance(node, CheckLeaf):
        yield node
    elif node.op == "all":
        for child in node.children:
            if child.required:
                yield from must_pass(child)
    elif len(node.children) == 1:
        yield from must_pass(node.children[0])


@settings(max_examples=300)
@given(raw=raw_trees(), data=st.data())
def test_score_is_always_in_unit_interval(raw: dict[str, Any], data: st.DataObject) -> None:
    root = parse_tree(raw)
    results = {n.path: data.draw(results_strategy) for n in leaves(root)}
    result = evaluate(root, results)
    assert 0.0 <= result.score <= 1.0
    assert [o.path for o in result.leaves] == [n.path for n in leaves(root)]


@settings(max_examples=300)
@given(raw=all_roots(), data=st.data())
def test_a_passing_all_root_had_every_required_leaf_pass(
    raw: dict[str, Any], data: st.DataObject
) -> None:
    root = parse_tree(raw)
    results = {n.path: data.draw(results_strategy) for n in leaves(root)}
    result = evaluate(root, results)
    if result.passed:
        assert isinstance(root, CheckGroup)
        for child in root.children:
            if isinstance(child, CheckLeaf) and child.required:
                assert results[child.path].passed
        for n in must_pass(root):
            assert results[n.path].passed


@settings(max_examples=300)
@given(raw=all_roots(), data=st.data())
def test_failing_a_required_leaf_fails_an_all_root(
    raw: dict[str, Any], data: st.DataObject
) -> None:
    root = parse_tree(raw)
    candidates = list(must_pass(root))
    results = {n.path: data.draw(results_strategy) for n in leaves(root)}
    if not candidates:
        return  # every child of the root is optional: nothing can fail it
    victim = data.draw(st.sampled_from(candidates))
    results[victim.path] = CheckResult(False, results[victim.path].score, "flipped")
    assert not evaluate(root, results).passed


@settings(max_examples=200)
@given(raw=raw_trees())
def test_all_leaves_passing_with_full_credit_scores_one(raw: dict[str, Any]) -> None:
    root = parse_tree(raw)
    result = evaluate(root, {n.path: PASS for n in leaves(root)})
    assert result.passed
    assert result.score == pytest.approx(1.0)


@settings(max_examples=200)
@given(raw=raw_trees(), data=st.data())
def test_raising_one_leaf_score_never_lowers_the_total(
    raw: dict[str, Any], data: st.DataObject
) -> None:
    root = parse_tree(raw)
    results = {n.path: data.draw(results_strategy) for n in leaves(root)}
    before = evaluate(root, results)
    target = data.draw(st.sampled_from([n.path for n in leaves(root)]))
    old = results[target]
    results[target] = CheckResult(True, data.draw(st.floats(old.score, 1.0)), "better")
    after = evaluate(root, results)
    assert after.score >= before.score - 1e-9
    assert after.passed or not before.passed


# --- optional checks per phase --------------------------------------------------------

PHASE_TASK = """
id: phase-checks
app: gimp
level: L1
title: t
instruction: i
phases:
  - message: first
    trigger: agent_done
    checks:
      all:
        - {check: file_exists, path: ~/Desktop/a.png}
        - {check: image_size, path: ~/Desktop/a.png, width: 10, required: false}
  - message: second
    trigger: agent_ask
evaluate: {check: file_exists, path: ~/Desktop/b.png}
"""


def test_phase_checks_parse_with_their_full_paths(tmp_path: Any) -> None:
    from app.tasks.loader import load_task

    source = tmp_path / "phase-checks.yaml"
    source.write_text(PHASE_TASK)
    task = load_task(source)
    tree = task.phase_tree(0)
    assert tree is not None and task.phase_tree(1) is None
    assert [leaf.path for leaf in leaves(tree)] == [
        "phases[0].checks.all[0]",
        "phases[0].checks.all[1]",
    ]
    # The final tree does not include them.
    assert [leaf.path for leaf in leaves(task.eval_tree)] == ["evaluate"]


def test_a_bad_phase_check_is_reported_under_the_phase(tmp_path: Any) -> None:
    from app.tasks.loader import load_task

    source = tmp_path / "phase-checks.yaml"
    source.write_text(PHASE_TASK.replace("width: 10", "widht: 10"))
    with pytest.raises(TaskError) as caught:
        load_task(source)
    assert f"{source}:13: phases[0].checks: all[1].widht: unknown parameter of image_size" in str(
        caught.value
    )


def test_phase_checks_are_stored_apart_from_the_final_score() -> None:
    from app.store import Store

    store = Store.memory()
    episode = store.start_episode(
        task_id="t",
        task_path="t.yaml",
        task_sha256="0" * 64,
        app="gimp",
        level="L1",
        interactive=True,
        agent="null",
        user_mode="simulated",
        backend="local",
    )
    row = outcome("phases[0].checks", passed=True, score=1.0, phase=0)
    store.record_phase_checks(episode, 0, [row, replace(row, passed=False, score=0.0)])
    final = outcome("evaluate", passed=False, score=0.0)
    store.record_score(episode, passed=False, score=0.0, checks=[final])
    store.record_score(episode, passed=False, score=0.0, checks=[final])  # replaces only finals
    second = outcome("phases[1].checks", passed=True, score=1.0, phase=1)
    store.record_phase_checks(episode, 1, [second])
    checks = store.checks(episode)
    assert checks == [row, replace(row, passed=False, score=0.0), final, second]
    store.record_phase_checks(episode, 0, [row])  # a phase re-scored replaces its own rows
    assert [c.phase for c in store.checks(episode)] == [None, 1, 0]
    assert store.get_episode(episode).score == 0.0
    # An outcome recorded under the wrong owner would move credit in or out of the score.
    with pytest.raises(StoreError, match=r"belongs to phase 0, not to the final score"):
        store.record_score(episode, passed=True, score=1.0, checks=[row])
    with pytest.raises(StoreError, match=r"belongs to the final score, not to phase 1"):
        store.record_phase_checks(episode, 1, [final])
    assert [c.phase for c in store.checks(episode)] == [None, 1, 0]
