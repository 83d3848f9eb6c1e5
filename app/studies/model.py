"""The study file format: `studies/<id>.yaml`, as pydantic models.

A study is conditions × tasks under a design, with questionnaires at fixed points and
a consent text shown before anything is recorded. The loader (`app.studies.loader`)
validates a file against these models and then checks what a model alone cannot
(ids that must be unique, task blocks that fit the design, the consent file on disk);
`docs/studies.md` documents every field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, PrivateAttr, Tag, field_validator, model_validator

from app.agents.spec import AgentSpec, PersonSpec, read_agent_spec
from app.core.errors import AgentError
from app.core.validation import StrictModel
from app.core.vocabulary import QUESTIONNAIRE_POINTS, QuestionnairePoint
from app.studies.instruments import BUILTINS, Instrument, Item

ID_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,62}$"
"""Study, condition and item ids: lower case, digits, '-' and '_' (they name columns
of the export and folders)."""

Role = Literal["user", "agent"]
PhaseOffer = Literal["suggested", "brief"]
StandIn = Literal["script", "llm", "reference"]
Point = QuestionnairePoint
POINTS = QUESTIONNAIRE_POINTS


class Policy(StrictModel):
    """What each side may do in a condition's trials."""

    agent_may_ask: bool = True
    """The agent may ask the participant a question (ASK); when False, an ASK is
    answered that no answer comes and the trial goes on."""
    may_interrupt: bool = True
    """The participant may send a message while the agent works."""
    may_take_over: bool = False
    """The participant may act on the desktop themselves (their steps are recorded as
    theirs)."""
    may_give_feedback: bool = True
    """After the agent's DONE, the participant may send feedback and the trial goes
    on, instead of only accepting the result."""
    phases: PhaseOffer = "suggested"
    """`suggested`: each phase's message is offered to the participant when it is due,
    to send as it is, edit or replace; `brief`: the participant reads the whole brief
    (every phase) at the start and speaks freely."""


class Condition(StrictModel):
    """One condition: who the participant is, the agent beside them, and the policy."""

    id: str = Field(pattern=ID_PATTERN)
    title: str = ""
    participant: Role = "user"
    """`user`: the participant is the user who works with the agent; `agent`: the
    participant does the task alone (a human baseline) and no agent runs."""
    agent: Any = None
    """The agent (an agent spec as `--agent` or a suite takes it: a string, or a
    mapping with a `kind`); none when the participant is the agent."""
    policy: Policy = Policy()
    stand_in: StandIn | None = None
    """Who plays the participant in `study pilot`: `script` (the phase script's
    messages, as written) or `llm` (the LLM user) for a participant who is the user;
    `reference` (the task's reference solution) for one who is the agent. Default:
    script, or reference for the agent role."""
    _agent_spec: AgentSpec | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _agent_fits_the_role(self) -> Condition:
        if self.participant == "agent":
            if self.agent is not None:
                raise ValueError(
                    "agent: a participant who is the agent works alone; leave agent out"
                )
            if self.stand_in not in (None, "reference"):
                raise ValueError("stand_in: a participant who is the agent is piloted by reference")
            return self
        if self.agent is None:
            raise ValueError("agent: required when the participant is the user")
        try:
            spec = read_agent_spec(self.agent, "agent")
        except AgentError as exc:
            raise ValueError(str(exc)) from None
        if isinstance(spec, PersonSpec):
            raise ValueError("agent: a person as the agent is the agent role (participant: agent)")
        if self.stand_in == "reference":
            raise ValueError("stand_in: a participant who is the user is piloted by script or llm")
        self._agent_spec = spec
        return self

    @property
    def agent_spec(self) -> AgentSpec | None:
        """The parsed agent; None when the participant is the agent."""
        return self._agent_spec

    @property
    def pilot_stand_in(self) -> StandIn:
        if self.stand_in is not None:
            return self.stand_in
        return "reference" if self.participant == "agent" else "script"


class Tasks(StrictModel):
    """The trials' tasks: blocks of task ids, and the practice task before them."""

    blocks: list[list[str]] = Field(min_length=1)
    """Blocks of task ids. Within participants: one block that every condition runs,
    or one block per condition position (the k-th condition a participant meets runs
    block k, so that the Williams order balances tasks over conditions). Between
    participants: the participant's one condition runs every block in turn."""
    practice: str | None = None
    """A task run first, under the participant's first condition, never scored into
    the results."""
    time_limit: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Seconds a trial may take; None: the task's own budget."""
    break_seconds: float = Field(default=0, ge=0, allow_inf_nan=False)
    """A pause offered between blocks (the participant may go on sooner)."""

    @field_validator("blocks")
    @classmethod
    def _blocks_not_empty(cls, blocks: list[list[str]]) -> list[list[str]]:
        for n, block in enumerate(blocks):
            if not block:
                raise ValueError(f"block {n} is empty; a block holds at least one task id")
        return blocks


class Design(StrictModel):
    """How conditions and tasks are ordered for each participant."""

    participants: Literal["within", "between"] = "within"
    """`within`: every participant meets every condition; `between`: each meets one."""
    counterbalance: Literal["williams", "none"] = "williams"
    """Within: condition orders from a balanced Latin square (Williams design: each
    condition once in each position, each ordered pair of neighbours equally often;
    two squares for an odd number of conditions); `none`: the order as written.
    Between: conditions are handed out in turn, so their groups differ by one at most."""
    task_order: Literal["random", "fixed"] = "random"
    """`random`: the order of tasks within a block, shuffled per participant from the
    plan's seed; `fixed`: as written."""
    seed: int | None = Field(default=None, ge=0)
    """The plan's seed; None: `study plan` draws one and records it."""


class CustomItem(StrictModel):
    """A question the study writes itself."""

    id: str = Field(pattern=ID_PATTERN)
    kind: Literal["likert", "choice", "multiple", "number", "text"]
    prompt: str = Field(min_length=1)
    points: int | None = Field(default=None, ge=2, le=11)
    """Likert: the number of points (1..points)."""
    anchors: list[str] = Field(default_factory=list)
    """Likert: two labels (the ends) or one per point."""
    reverse: bool = False
    """Likert: scored points + 1 − value (an item worded against the construct)."""
    options: list[str] = Field(default_factory=list)
    """Choice and multiple: the options."""
    min: float | None = Field(default=None, allow_inf_nan=False)
    max: float | None = Field(default=None, allow_inf_nan=False)
    unit: str = ""
    required: bool = True

    @field_validator("anchors", "options", mode="before")
    @classmethod
    def _yaml_words(cls, value: Any) -> Any:
        # YAML 1.1 reads yes/no/on/off as booleans: an anchor "no" arrives as False.
        if isinstance(value, list):
            for word in value:
                if isinstance(word, bool):
                    raise ValueError(
                        f"{str(word).lower()} is what YAML makes of yes/no/on/off: "
                        "quote the label ('no')"
                    )
        return value

    @model_validator(mode="after")
    def _fields_fit_the_kind(self) -> CustomItem:
        likert = self.kind == "likert"
        if likert != (self.points is not None):
            raise ValueError("points: a likert item has points, other kinds have none")
        if self.points is not None and len(self.anchors) not in (0, 2, self.points):
            raise ValueError(f"anchors: two (the ends) or {self.points} (one per point)")
        if not likert and (self.anchors or self.reverse):
            raise ValueError("anchors and reverse are a likert item's")
        choosing = self.kind in ("choice", "multiple")
        if choosing and len(self.options) < 2:
            raise ValueError("options: a choice needs at least two")
        if choosing and len(set(self.options)) != len(self.options):
            raise ValueError("options: an option is written twice")
        if not choosing and self.options:
            raise ValueError("options: only choice and multiple items have options")
        if self.kind != "number" and (self.min is not None or self.max is not None):
            raise ValueError("min and max are a number item's")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError("min: greater than max")
        return self

    def item(self) -> Item:
        if self.kind == "likert":
            assert self.points is not None
            return Item(
                self.id,
                "likert",
                self.prompt,
                1,
                self.points,
                1,
                tuple(self.anchors),
                reverse=self.reverse,
                required=self.required,
            )
        if self.kind == "number":
            low = float("-inf") if self.min is None else self.min
            high = float("inf") if self.max is None else self.max
            return Item(
                self.id, "number", self.prompt, low, high, unit=self.unit, required=self.required
            )
        return Item(
            self.id, self.kind, self.prompt, options=tuple(self.options), required=self.required
        )


class CustomQuestionnaire(StrictModel):
    """A study's own questionnaire: an id, a title and its items."""

    id: str = Field(pattern=ID_PATTERN)
    title: str = ""
    items: list[CustomItem] = Field(min_length=1)

    @field_validator("items")
    @classmethod
    def _unique_items(cls, items: list[CustomItem]) -> list[CustomItem]:
        seen: set[str] = set()
        for n, item in enumerate(items):
            if item.id in seen:
                raise ValueError(f"items[{n}].id: {item.id!r} is used twice")
            seen.add(item.id)
        return items

    def instrument(self) -> Instrument:
        return Instrument(self.id, self.title or self.id, tuple(i.item() for i in self.items))


def _entry_kind(value: object) -> str:
    return "builtin" if isinstance(value, str) else "custom"


ENTRY_TAGS = ("builtin", "custom")
"""The tags of `QuestionnaireEntry`'s members, which pydantic puts in an error's path
and which mean nothing to the study's author (hidden from its errors)."""
QuestionnaireEntry = Annotated[
    Annotated[str, Tag("builtin")] | Annotated[CustomQuestionnaire, Tag("custom")],
    Discriminator(_entry_kind),
]
"""A built-in instrument's name (nasa_tlx, sus, trust) or a study's own questionnaire."""


class Questionnaires(StrictModel):
    """The questionnaires at each point of a session, in the order they are given."""

    pre_study: list[QuestionnaireEntry] = Field(default_factory=list)
    post_trial: list[QuestionnaireEntry] = Field(default_factory=list)
    """After every trial but the practice."""
    post_condition: list[QuestionnaireEntry] = Field(default_factory=list)
    """After a participant's last trial of each condition."""
    post_study: list[QuestionnaireEntry] = Field(default_factory=list)

    @field_validator("pre_study", "post_trial", "post_condition", "post_study")
    @classmethod
    def _known_and_unique(cls, entries: list[QuestionnaireEntry]) -> list[QuestionnaireEntry]:
        seen: set[str] = set()
        for n, entry in enumerate(entries):
            name = entry if isinstance(entry, str) else entry.id
            if isinstance(entry, str) and entry not in BUILTINS:
                raise ValueError(
                    f"[{n}]: unknown instrument {entry!r}; built in: {', '.join(BUILTINS)}, "
                    "or a mapping with id, title and items"
                )
            if name in seen:
                raise ValueError(f"[{n}]: {name!r} is given twice at this point")
            seen.add(name)
        return entries

    def at(self, point: Point) -> list[Instrument]:
        entries: list[QuestionnaireEntry] = getattr(self, point)
        return [BUILTINS[e] if isinstance(e, str) else e.instrument() for e in entries]


class Study(StrictModel):
    """A study file."""

    id: str = Field(pattern=ID_PATTERN)
    title: str = Field(min_length=1)
    consent: str = Field(min_length=1)
    """A Markdown file beside the study file (relative to its folder): shown before
    anything else; without the participant's consent nothing is recorded."""
    conditions: list[Condition] = Field(min_length=1)
    tasks: Tasks
    design: Design = Design()
    questionnaires: Questionnaires = Questionnaires()
    source: Path = Path()
    """The file the study was read from (set by the loader)."""

    def condition(self, condition_id: str) -> Condition:
        for condition in self.conditions:
            if condition.id == condition_id:
                return condition
        raise KeyError(condition_id)

    @property
    def folder(self) -> Path:
        return self.source.parent

    def task_ids(self) -> list[str]:
        """Every task the study runs, the practice first, each once."""
        ids = [self.tasks.practice] if self.tasks.practice else []
        for block in self.tasks.blocks:
            ids += [task for task in block if task not in ids]
        return ids
