"""Study files are validated like task files: unknown keys refused, each problem on a
line of its own naming the file, the line and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agents.spec import ModelSpec, ReferenceSpec
from app.studies.loader import StudyError, consent_text, find_study, load_study
from app.studies.model import Study
from tests.studies.helpers import write_study

GOOD = """\
id: ask-or-not
title: Does an agent that may ask help?
consent: consent.md
conditions:
  - id: asks
    agent: {kind: model, family: anthropic, model: claude-x, deadline: 120}
    policy: {phases: brief}
  - id: silent
    agent: reference
    policy: {agent_may_ask: false, may_take_over: true}
    stand_in: llm
  - id: alone
    participant: agent
tasks:
  practice: gimp-flip-export
  blocks: [[a, b], [c, d], [e, f]]
  time_limit: 600
  break_seconds: 60
design: {participants: within, counterbalance: williams, seed: 42}
questionnaires:
  pre_study:
    - id: background
      title: About you
      items:
        - {id: years, kind: number, prompt: "Years of GIMP?", min: 0, max: 60, unit: years}
        - {id: role, kind: choice, prompt: Your work, options: [design, photo, other]}
  post_trial: [nasa_tlx]
  post_condition: [sus, trust]
"""


def _write(tmp_path: Path, text: str, name: str = "ask-or-not.yaml") -> Path:
    (tmp_path / "consent.md").write_text("# Consent\n")
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_good_study_file_loads(tmp_path: Path) -> None:
    study = load_study(_write(tmp_path, GOOD), task_ids=[*"abcdef", "gimp-flip-export"])
    assert isinstance(study, Study)
    asks, silent, alone = study.conditions
    assert isinstance(asks.agent_spec, ModelSpec) and asks.agent_spec.deadline == 120
    assert asks.policy.phases == "brief" and asks.pilot_stand_in == "script"
    assert isinstance(silent.agent_spec, ReferenceSpec) and not silent.policy.agent_may_ask
    assert silent.pilot_stand_in == "llm"
    assert alone.agent_spec is None and alone.pilot_stand_in == "reference"
    assert [i.id for i in study.questionnaires.at("post_condition")] == ["sus", "trust"]
    (background,) = study.questionnaires.at("pre_study")
    assert [i.kind for i in background.items] == ["number", "choice"]
    assert study.task_ids() == ["gimp-flip-export", *"abcdef"]
    assert consent_text(study) == "# Consent\n"
    assert find_study("ask-or-not", tmp_path) == study


BAD = [
    (("  time_limit: 600", "  time_limt: 600"), ":17: tasks.time_limt: unknown key"),
    (
        ("design: {", "desing: {"),
        ":19: desing: unknown key (not part of the study format); did you mean 'design'?",
    ),
    (("family: anthropic", "family: gemini"), ":6: conditions[0]: agent.family: expected one"),
    (("deadline: 120", "deadline: -1"), ":6: conditions[0]: agent.deadline: expected a positive"),
    (
        ("participant: agent", "participant: agent\n    agent: reference"),
        ":14: conditions[2]: agent: a participant who is the agent works alone",
    ),
    (("id: silent", "id: asks"), ":8: conditions[1].id: 'asks' is also conditions[0]'s"),
    (("[c, d], [e, f]]", "[c, d]]"), ":16: tasks.blocks: 2 blocks for 3 conditions"),
    (("[a, b]", "[a, a]"), ":16: tasks.blocks[0]: 'a' is in the block twice"),
    (
        ("[nasa_tlx]", "[nasa_tlx, tlx]"),
        ":27: questionnaires.post_trial: [1]: unknown instrument 'tlx'",
    ),
    (("max: 60", "max: -1"), ":25: questionnaires.pre_study[0].items[0]: min: greater than max"),
    (
        ("options: [design, photo, other]", "options: [design]"),
        ":26: questionnaires.pre_study[0].items[1]: options: a choice needs at least two",
    ),
    (
        ("consent: consent.md", "consent: ../consent.md"),
        ":3: consent: asset path '../consent.md' must not contain '..'",
    ),
    (("consent: consent.md", "consent: nope.md"), ":3: consent: asset 'nope.md' not found in"),
    (("id: ask-or-not", "id: other"), ":1: id: 'other' must equal the file name 'ask-or-not'"),
    (
        ("stand_in: llm", "stand_in: reference"),
        ":11: conditions[1]: stand_in: a participant who is the user",
    ),
]


@pytest.mark.parametrize(("change", "expected"), BAD)
def test_a_bad_study_file_names_file_line_and_field(
    tmp_path: Path, change: tuple[str, str], expected: str
) -> None:
    old, new = change
    assert old in GOOD
    path = _write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(StudyError) as caught:
        load_study(path)
    assert f"{path}{expected}" in str(caught.value)


def test_tasks_missing_from_the_library_are_named(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD)
    with pytest.raises(StudyError) as caught:
        load_study(path, task_ids=["a", "b", "c", "d", "e"])
    text = str(caught.value)
    assert f"{path}:16: tasks.blocks[2][1]: no task 'f' in the library" in text
    assert f"{path}:15: tasks.practice: no task 'gimp-flip-export' in the library" in text


def test_yaml_booleans_in_labels_are_explained(tmp_path: Path) -> None:
    own = {
        "id": "own",
        "items": [
            {"id": "ok", "kind": "likert", "points": 5, "prompt": "Fine?", "anchors": ["no", "yes"]}
        ],
    }
    text = write_study(tmp_path, questionnaires={"post_study": [own]}).read_text()
    path = _write(tmp_path, text.replace("'no'", "no").replace("'yes'", "yes"), "study.yaml")
    with pytest.raises(StudyError, match="false is what YAML makes of yes/no/on/off"):
        load_study(path)


def test_not_a_study_at_all(tmp_path: Path) -> None:
    for text, expected in (("", "got nothing"), ("- a\n", "got list"), ("id: [\n", "YAML syntax")):
        with pytest.raises(StudyError, match=expected):
            load_study(_write(tmp_path, text))
    with pytest.raises(StudyError, match=r"no study 'ghost' in .* \(there: ask-or-not\)"):
        find_study("ghost", tmp_path)
