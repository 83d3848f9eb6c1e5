"""The agent spec parser: the command line's strings and a file's mappings become the
same typed specs, and a bad spec is refused naming its field and what was expected."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agents.factory import make_agent, model_config
from app.agents.families import FAMILIES, FAMILY_NAMES
from app.agents.spec import (
    AgentSpec,
    ModelSpec,
    NullSpec,
    PersonSpec,
    ReferenceSpec,
    ReplaySpec,
    ScriptedSpec,
    parse_agent_spec,
    read_agent_spec,
)
from app.batch.suite import load_suite
from app.core.errors import AgentError, TaskError


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("null", NullSpec()),
        ("reference", ReferenceSpec()),
        ("person", PersonSpec()),
        ("scripted:solutions/a.yaml", ScriptedSpec("solutions/a.yaml")),
        ("replay:12", ReplaySpec(12)),
        ("openai", ModelSpec(alias="openai")),
        ("openai:gpt-4o", ModelSpec(model="gpt-4o", alias="openai")),
        ("model:m", ModelSpec(model="m")),
        ("anthropic:claude-opus-4-6", ModelSpec(family="anthropic", model="claude-opus-4-6")),
        ("uitars", ModelSpec(family="uitars")),
    ],
)
def test_a_string_spec_parses_and_reads_back_as_written(text: str, spec: AgentSpec) -> None:
    assert parse_agent_spec(text) == spec
    assert str(spec) == text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gpt", "unknown agent 'gpt'; expected reference | null"),
        ("replay:x", "replay:x: replay takes an episode id, like replay:12"),
        ("scripted:", "scripted: expected a file, like scripted:solution.yaml"),
        ("Reference", "unknown agent 'Reference'"),
    ],
)
def test_a_bad_string_is_refused_saying_what_was_expected(text: str, message: str) -> None:
    with pytest.raises(AgentError, match="^" + message.replace("|", r"\|").replace("(", r"\(")):
        parse_agent_spec(text)
    with pytest.raises(AgentError, match=r"^agents\[3\]: "):
        parse_agent_spec(text, "agents[3]")


def test_every_family_in_the_table_is_a_model_spec_head() -> None:
    for family in FAMILY_NAMES:
        assert parse_agent_spec(f"{family}:m") == ModelSpec(family=family, model="m")
    assert tuple(FAMILIES) == FAMILY_NAMES


def test_a_mapping_gives_the_same_spec_as_the_string() -> None:
    assert read_agent_spec({"kind": "null"}) == NullSpec()
    assert read_agent_spec(None) == NullSpec()  # YAML's bare null in an agent list
    assert read_agent_spec({"kind": "replay", "episode": 4}) == parse_agent_spec("replay:4")
    assert read_agent_spec({"kind": "scripted", "path": "a.yaml"}) == ScriptedSpec("a.yaml")
    assert read_agent_spec({"kind": "person", "port": 5999}) == PersonSpec(5999)
    assert read_agent_spec("anthropic:c") == ModelSpec(family="anthropic", model="c")


def test_a_model_mapping_types_its_options() -> None:
    spec = read_agent_spec(
        {
            "kind": "model",
            "family": "anthropic",
            "model": "claude-opus-4-6",
            "base_url": "http://127.0.0.1:9/v1",
            "computer_tool": "computer_20250124",
            "text_turn": "ask",
            "deadline": 30,
            "history": 0,
        }
    )
    assert spec == ModelSpec(
        family="anthropic",
        model="claude-opus-4-6",
        base_url="http://127.0.0.1:9/v1",
        computer_tool="computer_20250124",
        text_turn="ask",
        deadline=30.0,
        history=0,
    )
    assert str(spec) == "anthropic:claude-opus-4-6"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, "study.agent.kind: required"),
        ({"kind": "robot"}, "study.agent.kind: expected one of null, reference, scripted"),
        ({"kind": "scripted"}, "study.agent.path: required"),
        ({"kind": "scripted", "path": 3}, "study.agent.path: expected a non-empty string, got 3"),
        ({"kind": "replay", "episode": "7"}, "study.agent.episode: expected an integer >= 1"),
        ({"kind": "replay", "episode": True}, "study.agent.episode: expected an integer >= 1"),
        (
            {"kind": "person", "port": 70000},
            "study.agent.port: expected an integer >= 0 and <= 65535",
        ),
        ({"kind": "null", "model": "m"}, "study.agent.model: unknown field; expected kind"),
        ({"kind": "model", "family": "gpt"}, "study.agent.family: expected one of deskloop, "),
        ({"kind": "model", "deadline": 0}, "study.agent.deadline: expected a positive number"),
        ({"kind": "model", "deadline": "soon"}, "study.agent.deadline: expected a positive"),
        (
            {"kind": "model", "image_width": 10},
            "study.agent.image_width: expected an integer >= 64",
        ),
        ({"kind": "model", "coords": "0-100"}, "study.agent.coords: expected one of pixels, 0-1"),
        ({"kind": "model", "temperature": 1}, "study.agent.temperature: unknown field"),
        (
            {"kind": "model", "family": "qwen", "computer_tool": "computer"},
            "study.agent.computer_tool: expected none: qwen has no computer tool",
        ),
        (
            {"kind": "model", "family": "anthropic", "computer_tool": "computer"},
            "study.agent.computer_tool: expected one of anthropic's: computer_20241022",
        ),
        (
            {"kind": "model", "family": "uitars", "text_turn": "ask"},
            "study.agent.text_turn: only anthropic and openai-cua models",
        ),
        (
            {"kind": "model", "family": "deskloop", "coords": "0-1"},
            "study.agent.coords: expected pixels",
        ),
        (
            {"kind": "model", "family": "qwen", "tool_mode": "json"},
            "study.agent.tool_mode: only the deskloop family",
        ),
    ],
)
def test_a_bad_mapping_names_the_field_and_what_was_expected(
    data: dict[str, object], message: str
) -> None:
    with pytest.raises(AgentError) as caught:
        read_agent_spec(data, "study.agent")
    assert str(caught.value).startswith(message), str(caught.value)


def test_a_value_that_is_no_spec_is_refused() -> None:
    with pytest.raises(AgentError, match=r"^agents\[0\]: expected an agent spec .* got int"):
        read_agent_spec(3, "agents[0]")


def test_a_model_specs_options_reach_the_agents_config() -> None:
    from app.agents.adapters import AdapterConfig
    from app.agents.adapters.deskloop import DeskLoopConfig

    spec = ModelSpec(family="qwen", model="q", history=2, screenshots=3, deadline=9.0)
    config = model_config(spec)
    assert isinstance(config, AdapterConfig)
    assert (config.adapter, config.model, config.history, config.screenshots) == ("qwen", "q", 2, 3)
    assert config.deadline == 9.0
    # The TUI's timeout field outranks the spec's deadline.
    assert model_config(spec, agent_timeout=4.0).deadline == 4.0
    own = model_config(ModelSpec(model="m", tool_mode="json", image_width=640))
    assert isinstance(own, DeskLoopConfig) and (own.tool_mode, own.image_width) == ("json", 640)
    with pytest.raises(AgentError, match="a model name is required"):
        model_config(ModelSpec(family="qwen"))


def test_a_person_is_no_agent_the_factory_builds(tmp_path: Path) -> None:
    from app.tasks.loader import find_task

    task = find_task("gimp-flip-export", ["tasks"])
    with pytest.raises(AgentError, match="deskloop human"):
        make_agent(PersonSpec(), task)


def test_a_suite_names_the_place_of_a_bad_agent(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text("tasks: [gimp-flip-export]\nagents: [reference, replay:last]\n")
    with pytest.raises(TaskError, match=r"suite.yaml: agents\[1\]: replay:last: replay takes"):
        load_suite(suite)
