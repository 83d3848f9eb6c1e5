"""Agent specs: which agent an episode runs, as one typed value.

A spec is parsed once, where it enters DeskLoop, and the parsed value travels from
there: `deskloop run --agent`, a batch's agents (the command line's and a suite
file's), the TUI's start dialog and study files all go through `read_agent_spec`.
It takes the command line's string (`reference`, `null`, `scripted:FILE`,
`replay:EPISODE`, `person`, `openai[:MODEL]`, `model[:MODEL]`, `FAMILY[:MODEL]`) or
a mapping with a `kind` (what a YAML or JSON file holds), so a model agent's endpoint,
family and deadline can be written beside it:

    {kind: model, family: anthropic, model: claude-sonnet-4-5, deadline: 300}

A bad spec raises `AgentError` naming the field (`agents[2].deadline`) and what was
expected. Parsing reads no file and starts nothing: whether a script exists or a task
has a reference is the factory's question (`app.agents.factory`), asked when the agent
is built for a task. The module imports only the families' table, so the command line
can parse specs before it loads any agent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, TypeVar

from app.agents.families import (
    COMPUTER_TOOLS,
    CONVENTIONS,
    FAMILIES,
    FAMILY_NAMES,
    TEXT_TURNS,
    TOOL_MODES,
    ComputerTool,
    Convention,
    Family,
    TextTurn,
    ToolMode,
    is_family,
)
from app.core.errors import AgentError

AGENT_SPECS = "reference | null | scripted:FILE | replay:EPISODE | openai[:MODEL] | ADAPTER:MODEL"
"""The string forms, as errors and the TUI's start dialog list them."""

ModelAlias = Literal["openai", "model"]
"""The words that name a model agent without naming its family (the config's, else
`deskloop`)."""
MODEL_ALIASES: tuple[ModelAlias, ...] = ("openai", "model")
MODEL_HEADS: tuple[str, ...] = (*MODEL_ALIASES, *FAMILY_NAMES)
"""The first words of a model agent's string spec."""


@dataclass(frozen=True)
class NullSpec:
    """The null agent: DONE at once."""

    def __str__(self) -> str:
        return "null"


@dataclass(frozen=True)
class ReferenceSpec:
    """The task's own reference solution, played by the scripted agent."""

    def __str__(self) -> str:
        return "reference"


@dataclass(frozen=True)
class ScriptedSpec:
    """A scripted agent's file."""

    path: str
    """As written: relative paths are the caller's working directory's."""

    def __str__(self) -> str:
        return f"scripted:{self.path}"


@dataclass(frozen=True)
class ReplaySpec:
    """An episode of the same task, recorded in the store, played back."""

    episode: int

    def __str__(self) -> str:
        return f"replay:{self.episode}"


@dataclass(frozen=True)
class PersonSpec:
    """A person driving the desktop (`deskloop human`, the TUI's `human`) through a
    VNC viewer on a recording proxy, or the TUI's live view."""

    port: int = 0
    """The proxy's port; 0: any free one."""

    def __str__(self) -> str:
        return "person"


@dataclass(frozen=True)
class ModelSpec:
    """A model agent. Every option left None is the config's the caller holds (the
    command line's options, a suite's endpoint), else the family's default."""

    family: Family | None = None
    """The wire format; None: the config's, else `deskloop`."""
    model: str = ""
    """The model's name; '': the config's."""
    alias: ModelAlias = "model"
    """How a spec without a family named the agent (`openai:M` or `model:M`)."""
    base_url: str | None = None
    api_key_env: str | None = None
    """The environment variable holding the key (never the key itself)."""
    coords: Convention | None = None
    computer_tool: ComputerTool | None = None
    text_turn: TextTurn | None = None
    image_width: int | None = None
    image_height: int | None = None
    history: int | None = None
    screenshots: int | None = None
    tool_mode: ToolMode | None = None
    deadline: float | None = None
    """Seconds each call to the endpoint may take in all (`--agent-timeout`)."""

    def __str__(self) -> str:
        head = self.family or self.alias
        return f"{head}:{self.model}" if self.model else head


AgentSpec = NullSpec | ReferenceSpec | ScriptedSpec | ReplaySpec | PersonSpec | ModelSpec
"""Which agent an episode runs."""
AGENT_SPEC_TYPES = (NullSpec, ReferenceSpec, ScriptedSpec, ReplaySpec, PersonSpec, ModelSpec)
"""`AgentSpec`'s classes, for telling a spec from an agent already built."""

_Word = TypeVar("_Word", bound=str)

KINDS = ("null", "reference", "scripted", "replay", "model", "person")
"""The `kind` of a spec written as a mapping."""


def _prefix(where: str | None) -> str:
    return f"{where}: " if where else ""


def parse_agent_spec(text: str, where: str | None = None) -> AgentSpec:
    """The spec a string names (the command line's `--agent`, a suite's agents).
    `where` names the field in errors (None: the string is its own context).

    Raises:
        AgentError: an unknown agent, a `replay:` without an episode id, a
            `scripted:` without a file.
    """
    at = _prefix(where)
    head, colon, rest = text.partition(":")
    if text == "null":
        return NullSpec()
    if text == "reference":
        return ReferenceSpec()
    if text == "person":
        return PersonSpec()
    if head == "scripted" and colon:
        if not rest:
            raise AgentError(f"{at}scripted: expected a file, like scripted:solution.yaml")
        return ScriptedSpec(rest)
    if head == "replay" and colon:
        if not rest.isdigit():
            raise AgentError(f"{at}{text}: replay takes an episode id, like replay:12")
        return ReplaySpec(int(rest))
    if head in MODEL_ALIASES:
        return ModelSpec(model=rest, alias="openai" if head == "openai" else "model")
    if is_family(head):
        return ModelSpec(family=head, model=rest)
    raise AgentError(f"{at}unknown agent {text!r}; expected {AGENT_SPECS}")


def read_agent_spec(value: object, where: str = "agent") -> AgentSpec:
    """The spec of a value read from a file (YAML, JSON) or typed in: a string as
    `parse_agent_spec` takes it, a mapping with a `kind`, or None (YAML's bare `null`:
    the null agent).

    Raises:
        AgentError: naming `where` and the field, and what was expected.
    """
    if value is None:
        return NullSpec()
    if isinstance(value, str):
        return parse_agent_spec(value, where)
    if isinstance(value, Mapping):
        return agent_spec_from_mapping(value, where)
    raise AgentError(
        f"{where}: expected an agent spec (a string like 'reference', or a mapping "
        f"with a kind), got {type(value).__name__}"
    )


def agent_spec_from_mapping(data: Mapping[object, object], where: str = "agent") -> AgentSpec:
    """The spec a mapping describes: `kind` (one of `KINDS`) and that kind's fields
    (`scripted`: path; `replay`: episode; `person`: port; `model`: family, model and
    the `ModelSpec` options).

    Raises:
        AgentError: no or an unknown kind, an unknown field, or a field of the wrong
            type or out of range, each naming `where.field`.
    """
    reader = _Fields(data, where)
    kind = reader.choice("kind", KINDS, required=True)
    spec: AgentSpec
    if kind == "model":
        spec = _model_from(reader)
    elif kind == "scripted":
        spec = ScriptedSpec(reader.text("path", required=True) or "")
    elif kind == "replay":
        spec = ReplaySpec(reader.integer("episode", minimum=1, required=True) or 0)
    elif kind == "person":
        port = reader.integer("port", minimum=0, maximum=65535)
        spec = PersonSpec(0 if port is None else port)
    else:
        spec = NullSpec() if kind == "null" else ReferenceSpec()
    reader.no_others()
    return spec


def _model_from(reader: _Fields) -> ModelSpec:
    family = reader.choice("family", FAMILY_NAMES)
    spec = ModelSpec(
        family=family,
        model=reader.text("model") or "",
        base_url=reader.text("base_url"),
        api_key_env=reader.text("api_key_env"),
        coords=reader.choice("coords", CONVENTIONS),
        computer_tool=reader.choice("computer_tool", COMPUTER_TOOLS),
        text_turn=reader.choice("text_turn", TEXT_TURNS),
        image_width=reader.integer("image_width", minimum=64),
        image_height=reader.integer("image_height", minimum=64),
        history=reader.integer("history", minimum=0),
        screenshots=reader.integer("screenshots", minimum=1),
        tool_mode=reader.choice("tool_mode", TOOL_MODES),
        deadline=reader.seconds("deadline"),
    )
    check_model_spec(spec, reader.where)
    return spec


def check_model_spec(spec: ModelSpec, where: str = "agent") -> None:
    """Refuse options the spec's family does not take (when it names one).

    Raises:
        AgentError: naming `where.field`.
    """
    family = spec.family
    if family is None:
        return
    row = FAMILIES[family]
    if spec.computer_tool is not None and spec.computer_tool not in row.tools:
        having = [name for name, other in FAMILIES.items() if other.tools]
        expected = (
            f"one of {family}'s: {', '.join(row.tools)}"
            if row.tools
            else f"none: {family} has no computer tool ({' and '.join(having)} have)"
        )
        raise AgentError(f"{where}.computer_tool: expected {expected}, got {spec.computer_tool!r}")
    if spec.text_turn is not None and not row.text_turns:
        having = [name for name, other in FAMILIES.items() if other.text_turns]
        raise AgentError(
            f"{where}.text_turn: only {' and '.join(having)} models answer with text "
            f"turns, not {family}'s"
        )
    if family == "deskloop" and spec.coords not in (None, "pixels"):
        raise AgentError(f"{where}.coords: expected pixels (DeskLoop's tools take pixels)")
    if family != "deskloop" and spec.tool_mode is not None:
        raise AgentError(f"{where}.tool_mode: only the deskloop family has a tool mode")


class _Fields:
    """Reads a mapping's fields one by one, each error naming `where.field`; what was
    not read is an unknown field."""

    def __init__(self, data: Mapping[object, object], where: str) -> None:
        self.data = data
        self.where = where
        self._read: set[str] = set()

    def _get(self, name: str, required: bool) -> object:
        self._read.add(name)
        value = self.data.get(name)
        if value is None and required:
            raise AgentError(f"{self.where}.{name}: required")
        return value

    def _wrong(self, name: str, expected: str, value: object) -> AgentError:
        return AgentError(f"{self.where}.{name}: expected {expected}, got {value!r}")

    def text(self, name: str, *, required: bool = False) -> str | None:
        value = self._get(name, required)
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            raise self._wrong(name, "a non-empty string", value)
        return value

    def choice(
        self, name: str, choices: tuple[_Word, ...], *, required: bool = False
    ) -> _Word | None:
        value = self._get(name, required)
        if value is None:
            return None
        for choice in choices:
            if value == choice:
                return choice
        raise self._wrong(name, f"one of {', '.join(choices)}", value)

    def integer(
        self,
        name: str,
        *,
        minimum: int,
        maximum: int | None = None,
        required: bool = False,
    ) -> int | None:
        value = self._get(name, required)
        if value is None:
            return None
        # bool is an int to Python, never to the person who wrote `history: true`.
        in_range = maximum is None or (isinstance(value, int) and value <= maximum)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum or not in_range:
            bounds = f"an integer >= {minimum}" + (f" and <= {maximum}" if maximum else "")
            raise self._wrong(name, bounds, value)
        return value

    def seconds(self, name: str) -> float | None:
        value = self._get(name, False)
        if value is None:
            return None
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not 0 < value < float("inf")
        ):
            raise self._wrong(name, "a positive number of seconds", value)
        return float(value)

    def no_others(self) -> None:
        for key in self.data:
            if key not in self._read:
                known = ", ".join(sorted(self._read))
                raise AgentError(f"{self.where}.{key}: unknown field; expected {known}")
