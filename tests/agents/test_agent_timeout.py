"""`--agent-timeout`, `--user-timeout`, a suite's `agent_timeout` and the factory's
`agent_timeout`: each reaches the endpoint config's deadline, and a value that is not
a positive number of seconds is refused with the flag or field named."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from app.agents.adapters.deskloop import DeskLoopAgent, DeskLoopConfig
from app.agents.factory import make_agent
from app.batch import load_suite
from app.cli import build_parser
from app.cli.agent_options import AGENT_TIMEOUT, USER_TIMEOUT, openai_config
from app.core.errors import TaskError
from app.users.llm import LLMUserConfig
from tests.endpoints.test_hung_endpoint import make_task


def test_the_options_defaults_are_the_configs() -> None:
    assert DeskLoopConfig.deadline == AGENT_TIMEOUT
    assert LLMUserConfig.deadline == USER_TIMEOUT


@pytest.mark.parametrize("command", [["run", "some-task"], ["batch", "run"]])
def test_agent_timeout_sets_the_deadline_and_a_suite_value_yields_to_it(
    command: list[str],
) -> None:
    parser = build_parser()
    given = parser.parse_args([*command, "--agent", "openai:m", "--agent-timeout", "90"])

    def deadline(args: argparse.Namespace, timeout: float | None = None) -> float:
        config = openai_config(args, ["openai:m"], timeout=timeout)
        assert config is not None
        return config.deadline

    assert deadline(given) == 90.0
    assert deadline(given, 30.0) == 90.0
    plain = parser.parse_args([*command, "--agent", "openai:m"])
    assert plain.agent_timeout is None
    assert deadline(plain, 30.0) == 30.0  # the suite's
    assert deadline(plain) == DeskLoopConfig.deadline


@pytest.mark.parametrize("flag", ["--agent-timeout", "--user-timeout"])
@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan", "inf"])
def test_a_timeout_that_is_not_positive_seconds_is_refused_by_name(
    flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["batch", "run", "--agent", "openai:m", flag, value])
    error = capsys.readouterr().err
    assert f"argument {flag}: must be a positive number of seconds, not {value!r}" in error


def test_a_suite_sets_the_agent_timeout(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text("tasks: [t]\nagents: [openai:m]\nagent_timeout: 45\n")
    assert load_suite(suite).agent_timeout == 45.0
    suite.write_text("tasks: [t]\nagents: [openai:m]\n")
    assert load_suite(suite).agent_timeout is None


@pytest.mark.parametrize("value", ["0", "-3", "'45'", ".inf", "true"])
def test_a_suite_timeout_that_is_not_positive_seconds_names_the_field(
    tmp_path: Path, value: str
) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"tasks: [t]\nagents: [openai:m]\nagent_timeout: {value}\n")
    with pytest.raises(TaskError, match=rf"{suite}: agent_timeout: "):
        load_suite(suite)


def test_the_factory_gives_a_model_agent_its_timeout(tmp_path: Path) -> None:
    task = make_task(tmp_path)
    agent = make_agent("openai:m", task, agent_timeout=45.0)
    assert isinstance(agent, DeskLoopAgent) and agent.config.deadline == 45.0
    config = DeskLoopConfig(model="other", deadline=10.0)
    agent = make_agent("openai", task, config, agent_timeout=20.0)
    assert isinstance(agent, DeskLoopAgent) and agent.config.deadline == 20.0
    assert make_agent("null", task, agent_timeout=20.0).name == "null"  # no endpoint
