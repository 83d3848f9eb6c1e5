"""Model agents' endpoint settings on the command line, in suite files and in a batch's
record: the adapter, model, base URL, key variable, coordinates and observation options
reach the agent's config, and the config is what an episode records."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agents.adapters import AdapterConfig, ModelConfig
from app.agents.spec import ModelSpec


@pytest.mark.parametrize("command", [["run", "some-task"], ["batch", "run"]])
def test_the_options_choose_adapter_endpoint_key_and_coordinates(command: list[str]) -> None:
    from app.cli import build_parser
    from app.cli.agent_options import openai_config

    parser = build_parser()
    args = parser.parse_args(
        [
            *command,
            "--agent",
            "openai:m",
            "--adapter",
            "uitars",
            "--base-url",
            "http://127.0.0.1:8000/v1",
            "--coords",
            "qwen-grid",
            "--api-key-env",
            "VLLM_KEY",
            "--agent-timeout",
            "40",
        ]
    )
    made = openai_config(args, ["openai:m"])
    assert isinstance(made, AdapterConfig)
    assert (
        made.adapter,
        made.model,
        made.base_url,
        made.api_key_env,
        made.convention,
        made.deadline,
    ) == ("uitars", "m", "http://127.0.0.1:8000/v1", "VLLM_KEY", "qwen-grid", 40.0)
    named = openai_config(parser.parse_args([*command, "--agent", "anthropic:c"]), ["anthropic:c"])
    assert isinstance(named, AdapterConfig) and named.adapter == "anthropic"
    assert named.base_url == "https://api.anthropic.com/v1"
    assert named.api_key_env == "ANTHROPIC_API_KEY"


def batch_run_config(suite: Path, agent: str) -> ModelConfig | None:
    """The model config `deskloop batch run <suite>` gives `agent`: the suite file's
    endpoint settings (it must have some) under the command's options."""
    from app.batch import load_suite
    from app.cli import build_parser
    from app.cli.agent_options import openai_config

    endpoint = load_suite(suite).endpoint
    assert endpoint is not None
    args = build_parser().parse_args(["batch", "run", str(suite)])
    return openai_config(args, [agent], None, endpoint.model_dump(exclude_none=True))


def test_a_suite_names_the_endpoint_and_refuses_unknown_adapters(tmp_path: Path) -> None:
    from app.batch import load_suite
    from app.core.errors import TaskError

    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "tasks: [t]\nagents: [model]\nendpoint:\n  adapter: qwen\n  model: Qwen/Qwen2.5-VL-7B\n"
        "  base_url: http://127.0.0.1:8000/v1\n"
    )
    made = batch_run_config(suite, "model")
    assert isinstance(made, AdapterConfig) and made.adapter == "qwen"
    assert made.model == "Qwen/Qwen2.5-VL-7B" and made.convention == "qwen-grid"
    suite.write_text("tasks: [t]\nagents: [model]\nendpoint: {adapter: gemini}\n")
    with pytest.raises(TaskError, match=rf"{suite}: endpoint.adapter: "):
        load_suite(suite)


def test_a_batch_records_an_adapters_config_and_resumes_with_it() -> None:
    from app.batch import BatchOptions

    made = AdapterConfig(model="m", adapter="qwen", coords="0-1000", screenshots=3)
    again = BatchOptions.from_json(BatchOptions(openai=made).to_json()).openai
    assert again == made


def test_history_and_screenshots_options_are_recorded() -> None:
    from app.cli import build_parser
    from app.cli.agent_options import openai_config

    parser = build_parser()
    args = parser.parse_args(
        ["run", "t", "--agent", "uitars:m", "--history", "3", "--screenshots", "4"]
    )
    made = openai_config(args, ["uitars:m"])
    assert isinstance(made, AdapterConfig)
    assert (made.history, made.screenshots) == (3, 4)
    assert made.public()["history"] == 3 and made.public()["screenshots"] == 4
    tools = openai_config(
        parser.parse_args(["run", "t", "--agent", "openai:m", "--history", "0"]), ["openai:m"]
    )
    assert tools is not None and tools.history == 0 and tools.public()["history"] == 0


async def test_a_batch_runs_two_families_against_their_endpoints(tmp_path: Path) -> None:
    """A batch of `anthropic:M` and `qwen:M` on one config: each agent speaks its own
    format, and the report counts their tokens (fake desktops: the batch is the point)."""
    import io

    from app.batch import BatchOptions, start_batch
    from app.metrics.summary import summarize
    from app.store import Store
    from tests.batch.test_batch_pool import World
    from tests.endpoints.test_hung_endpoint import make_task
    from tests.fake_openai import FakeEndpoint
    from tests.fake_providers import anthropic_reply, qwen_reply

    task = make_task(tmp_path)
    world = World()
    replies = [
        anthropic_reply(text="Nothing to do."),
        qwen_reply({"action": "terminate", "status": "success"}),
    ]
    with FakeEndpoint(replies) as endpoint, Store(tmp_path / "db.sqlite") as store:
        options = BatchOptions(
            openai=AdapterConfig(model="m", adapter="anthropic", base_url=endpoint.base_url)
        )
        runner = start_batch(
            store, [task], ["anthropic:claude", "qwen:qwen-vl"], 1, options, batch_id="two",
            desktop_factory=world.factory, progress_stream=io.StringIO(), log=lambda _: None,
        )  # fmt: skip
        rows = await runner.run()
        by_agent = {g.agent: g for g in summarize(store, "two").by_agent}
    assert sorted(row.status for row in rows) == ["finished", "finished"]
    assert sorted(r.path for r in endpoint.received) == ["/v1/chat/completions", "/v1/messages"]
    assert by_agent["anthropic:claude"].tokens == 2095 + 503
    assert by_agent["qwen:qwen-vl"].tokens == 1230


def test_each_family_has_its_own_endpoint_and_key_variable_by_default() -> None:
    from app.agents.factory import make_agent
    from app.tasks.loader import load_task

    assert AdapterConfig(model="c", adapter="anthropic").base_url == "https://api.anthropic.com/v1"
    assert AdapterConfig(model="c", adapter="anthropic").api_key_env == "ANTHROPIC_API_KEY"
    assert AdapterConfig(model="q", adapter="qwen").api_key_env == "OPENAI_API_KEY"
    task = load_task(Path("tasks/gimp/gimp-flip-export.yaml"))
    hosted = AdapterConfig(model="c", adapter="anthropic")
    # Another family on the same config: its own defaults, not Anthropic's.
    other = make_agent("openai-cua:computer-use-preview", task, hosted)
    assert other.config.base_url == "https://api.openai.com/v1"  # type: ignore[attr-defined]
    assert other.config.api_key_env == "OPENAI_API_KEY"  # type: ignore[attr-defined]
    local = AdapterConfig(model="c", adapter="anthropic", base_url="http://127.0.0.1:9/v1")
    kept = make_agent("qwen:q", task, local)
    assert kept.config.base_url == "http://127.0.0.1:9/v1"  # type: ignore[attr-defined]


def test_a_checkpoints_name_refines_its_familys_convention() -> None:
    def convention(adapter: str, model: str) -> str:
        return AdapterConfig(model=model, adapter=adapter).convention

    assert convention("qwen", "Qwen/Qwen2.5-VL-7B-Instruct") == "qwen-grid"
    assert convention("qwen", "Qwen/Qwen3-VL-30B-A3B-Instruct") == "0-1000"
    assert convention("uitars", "ByteDance-Seed/UI-TARS-1.5-7B") == "qwen-grid"
    assert convention("uitars", "bytedance-research/UI-TARS-7B-DPO") == "0-1000"
    assert AdapterConfig(model="UI-TARS-1.5-7B", adapter="uitars", coords="0-1").convention == "0-1"


@pytest.mark.parametrize("command", [["run", "some-task"], ["batch", "run"]])
def test_the_computer_tool_is_chosen_on_the_command_line(command: list[str]) -> None:
    from app.cli import build_parser
    from app.cli.agent_options import openai_config

    parser = build_parser()
    spec = "anthropic:claude-opus-4-6"
    table = openai_config(parser.parse_args([*command, "--agent", spec]), [spec])
    assert isinstance(table, AdapterConfig)
    assert table.format.tool == "computer_20251124"
    assert table.format.beta == "computer-use-2025-11-24"
    args = parser.parse_args([*command, "--agent", spec, "--computer-tool", "computer_20250124"])
    chosen = openai_config(args, [spec])
    assert isinstance(chosen, AdapterConfig) and chosen.computer_tool == "computer_20250124"
    assert chosen.format.beta == "computer-use-2025-01-24"
    assert chosen.public()["computer_tool"]["by"] == "option"
    with pytest.raises(SystemExit):
        parser.parse_args([*command, "--agent", spec, "--computer-tool", "computer_2099"])


def test_a_computer_tool_of_another_family_is_refused() -> None:
    from app.cli import build_parser
    from app.cli.agent_options import openai_config
    from app.core.errors import AgentError, DeskLoopError

    with pytest.raises(AgentError, match="'computer' is not one of anthropic's computer tools"):
        AdapterConfig(model="claude-opus-4-6", adapter="anthropic", computer_tool="computer")
    with pytest.raises(AgentError, match="qwen has no computer tool"):
        AdapterConfig(model="q", adapter="qwen", computer_tool="computer_20251124")
    args = build_parser().parse_args(
        ["run", "t", "--agent", "openai:m", "--computer-tool", "computer"]
    )
    with pytest.raises(DeskLoopError, match="--computer-tool is an adapter's"):
        openai_config(args, ["openai:m"])


def test_a_suite_chooses_the_computer_tool_and_a_batch_keeps_it(tmp_path: Path) -> None:
    from app.batch import BatchOptions

    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "tasks: [t]\nagents: ['openai-cua:gpt-5.4']\n"
        "endpoint: {computer_tool: computer_use_preview}\n"
    )
    made = batch_run_config(suite, "openai-cua:gpt-5.4")
    assert isinstance(made, AdapterConfig) and made.format.tool == "computer_use_preview"
    assert BatchOptions.from_json(BatchOptions(openai=made).to_json()).openai == made


def test_another_familys_agent_on_the_same_config_takes_its_own_tool() -> None:
    from app.agents.factory import make_agent
    from app.tasks.loader import load_task

    task = load_task(Path("tasks/gimp/gimp-flip-export.yaml"))
    claude = AdapterConfig(model="c", adapter="anthropic", computer_tool="computer_20250124")
    other = make_agent("openai-cua:gpt-5.4", task, claude)
    assert other.config.format.tool == "computer"  # type: ignore[attr-defined]
    same = make_agent("anthropic:claude-opus-4-7", task, claude)
    assert same.config.format.tool == "computer_20250124"  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", [["run", "some-task"], ["batch", "run"]])
def test_the_text_turn_policy_is_chosen_on_the_command_line_and_in_a_suite(
    command: list[str], tmp_path: Path
) -> None:
    from app.cli import build_parser
    from app.cli.agent_options import openai_config
    from app.core.errors import AgentError, DeskLoopError

    parser = build_parser()
    spec = "openai-cua:gpt-5.4"
    default = openai_config(parser.parse_args([*command, "--agent", spec]), [spec])
    assert isinstance(default, AdapterConfig)
    assert default.text_turn == "done" and default.public()["text_turn"] == "done"
    asked = openai_config(
        parser.parse_args([*command, "--agent", spec, "--text-turn", "ask"]), [spec]
    )
    assert isinstance(asked, AdapterConfig)
    assert asked.text_turn == "ask" and asked.public()["text_turn"] == "ask"
    with pytest.raises(SystemExit):
        parser.parse_args([*command, "--agent", spec, "--text-turn", "maybe"])
    with pytest.raises(AgentError, match="text_turn must be ask or done"):
        AdapterConfig(model="m", adapter="anthropic", text_turn="maybe")  # type: ignore[arg-type]
    tools = parser.parse_args([*command, "--agent", "openai:m", "--text-turn", "ask"])
    with pytest.raises(DeskLoopError, match="--text-turn is the anthropic and openai-cua"):
        openai_config(tools, ["openai:m"])
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"tasks: [t]\nagents: ['{spec}']\nendpoint: {{text_turn: ask}}\n")
    made = batch_run_config(suite, spec)
    assert isinstance(made, AdapterConfig)
    assert made.text_turn == "ask"


def test_the_command_line_the_start_dialog_and_a_spec_file_build_the_same_config() -> None:
    """Three ways of naming one model agent's endpoint reach one builder: the same
    endpoint gives the same config, and a bad field is named where it was given."""
    from app.agents.factory import endpoint_config, model_config
    from app.agents.spec import read_agent_spec
    from app.cli import build_parser
    from app.cli.agent_options import openai_config
    from app.core.errors import AgentError

    url, key = "http://127.0.0.1:8000/v1", "VLLM_KEY"
    args = build_parser().parse_args(
        ["run", "t", "--agent", "qwen:q", "--base-url", url, "--api-key-env", key]
    )
    from_options = openai_config(args, ["qwen:q"])
    from_dialog = endpoint_config("qwen:q", base_url=url, api_key_env=key)
    fields = {"kind": "model", "family": "qwen", "model": "q", "base_url": url, "api_key_env": key}
    written = read_agent_spec(fields)
    assert isinstance(written, ModelSpec)
    from_file = model_config(written)
    assert from_options == from_dialog == from_file
    assert isinstance(from_file, AdapterConfig) and from_file.base_url == url
    with pytest.raises(AgentError, match=r"start dialog\.computer_tool: expected none"):
        endpoint_config("openai:m", computer_tool="computer_20250124")
    with pytest.raises(AgentError, match=r"start dialog\.family: expected one of"):
        endpoint_config("openai:m", adapter="gemini")
