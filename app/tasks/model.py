"""The task model: τ = (s0, u0, Φ, E, R) as validated data.

Models reject unknown keys. Field docstrings are the reference for the task
format (docs/tasks.md follows them). Paths to task assets are checked by the
loader, which knows the task's folder.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PlainSerializer,
    PlainValidator,
    PrivateAttr,
    Tag,
    field_validator,
    model_validator,
)

from app.checks.tree import CheckGroup, CheckLeaf, EvalNode
from app.core.triggers import Trigger, parse_trigger, possible_events, trigger_to_raw
from app.core.vocabulary import PhaseKind

TASK_ID_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
APPS = ("gimp", "blender", "kdenlive", "web")
MESSAGE_KINDS = ("clarification", "interruption", "feedback", "answer")


class _Strict(BaseModel):
    # strict: a number is a number and a flag a flag. Lax pydantic took `steps: true`
    # as 1 step and `steps: "10"` as 10; an unknown key is an error, never a default.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class UploadSpec(_Strict):
    src: str
    """Asset path relative to the task's folder (must stay inside it)."""
    dest: str
    """Destination in the desktop's session, under its home: '~/...'."""

    @field_validator("dest")
    @classmethod
    def _in_the_home(cls, value: str) -> str:
        # Checked here as well as by the guest at run time, so that `tasks validate`
        # refuses what a run would (the home's absolute path differs between desktops).
        if not value.startswith("~/") or value == "~/":
            raise ValueError(f"{value!r} must be a file under the desktop's home, '~/...'")
        if ".." in PurePosixPath(value[2:]).parts:
            raise ValueError(f"{value!r} must not contain '..': it would leave the home")
        return value


class UploadStep(_Strict):
    upload: UploadSpec
    """Copy a task asset into the desktop."""


class LaunchStep(_Strict):
    launch: Annotated[list[str], Field(min_length=1)]
    """A program and its arguments (argv list, never a shell string); '~/' expands to
    the session's home. The program is started and not waited for."""

    @field_validator("launch")
    @classmethod
    def _no_empty(cls, value: list[str]) -> list[str]:
        if any(not part for part in value):
            raise ValueError("argv items must be non-empty strings")
        return value


class WaitWindowSpec(_Strict):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, populate_by_name=True)
    wm_class: str | None = Field(default=None, alias="class")
    """Window class to wait for (as `xdotool search --class`)."""
    name: str | None = None
    """Window title (regular expression) to wait for."""
    timeout: Annotated[float, Field(gt=0, le=600)] = 60.0
    """Seconds to wait before setup fails."""

    @field_validator("wm_class", "name")
    @classmethod
    def _a_pattern(cls, value: str | None) -> str | None:
        # Both are regular expressions (xdotool's); one that cannot compile would fail
        # only at run time, after the whole timeout.
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"{value!r} is not a regular expression: {exc}") from None
        return value

    @model_validator(mode="after")
    def _one_of(self) -> WaitWindowSpec:
        if self.wm_class is None and self.name is None:
            raise ValueError("give 'class' or 'name' (or both)")
        return self


class WaitWindowStep(_Strict):
    wait_window: WaitWindowSpec
    """Wait until a matching window is visible, then until the screen settles."""


class SleepStep(_Strict):
    sleep: Annotated[float, Field(gt=0, le=120)]
    """Pause, in seconds. Prefer wait_window: it waits on meaning, not time."""


def _site_relative(value: str, what: str) -> str:
    # The loader checks the path against the task folder on disk; this refuses the
    # shapes that could never stay inside it, so a model built in code is safe too.
    pure = PurePosixPath(value)
    if not value or pure.is_absolute() or value.startswith("~") or "\\" in value:
        raise ValueError(f"{value!r} must be a {what} relative to the task folder")
    if ".." in pure.parts:
        raise ValueError(f"{value!r} must not contain '..': it would leave the task folder")
    return value


class OpenPageSpec(_Strict):
    site: str
    """The web app's folder, relative to the task folder (e.g. 'assets/kanban'): every
    file under it is copied into the desktop (~/.deskloop-web/<task id>/) and nothing
    under it may lead outside the task folder."""
    page: str = "index.html"
    """The page to open, relative to `site`."""
    timeout: Annotated[float, Field(gt=0, le=300)] = 30.0
    """Seconds for the browser to start and the page to define the page contract."""

    @field_validator("site")
    @classmethod
    def _site_inside(cls, value: str) -> str:
        return _site_relative(value, "folder")

    @field_validator("page")
    @classmethod
    def _page_inside(cls, value: str) -> str:
        return _site_relative(value, "file")


class OpenPageStep(_Strict):
    open_page: OpenPageSpec
    """Copy a web app into the desktop and open it in a kiosk browser (web tasks);
    setup waits until the page defines `getTasks`, `evaluateTask` and `reset`."""


class ResetPageSpec(_Strict):
    timeout: Annotated[float, Field(gt=0, le=60)] = 5.0
    """Seconds for the page's `reset()` to finish."""


class ResetPageStep(_Strict):
    reset_page: ResetPageSpec
    """Call the open page's `window.reset()` over the DevTools channel, then wait for the
    screen to settle (web tasks; after an `open_page`)."""


SETUP_KINDS = ("upload", "launch", "wait_window", "sleep", "open_page", "reset_page")
# The union's tags, which pydantic puts in an error's path before the step's own key:
# distinct words, so that the loader can drop them from the path (it printed
# `setup[0].upload.upload.mode`) without dropping the key.
SETUP_TAGS = tuple(f"setup:{kind}" for kind in SETUP_KINDS)


def _setup_kind(raw: Any) -> str | None:
    if isinstance(raw, dict) and len(raw) == 1:
        key = next(iter(raw))
        return f"setup:{key}" if key in SETUP_KINDS else None
    if isinstance(raw, BaseModel):
        return f"setup:{next(iter(type(raw).model_fields))}"
    return None


SetupStep = Annotated[
    Annotated[UploadStep, Tag("setup:upload")]
    | Annotated[LaunchStep, Tag("setup:launch")]
    | Annotated[WaitWindowStep, Tag("setup:wait_window")]
    | Annotated[SleepStep, Tag("setup:sleep")]
    | Annotated[OpenPageStep, Tag("setup:open_page")]
    | Annotated[ResetPageStep, Tag("setup:reset_page")],
    Discriminator(
        _setup_kind,
        custom_error_type="setup_step",
        custom_error_message=(
            "a setup step is a mapping with exactly one of: upload, launch, wait_window, "
            "sleep, open_page, reset_page"
        ),
    ),
]


def _trigger(raw: Any) -> Trigger:
    # The YAML form is parsed here, once; a Trigger (a phase copied or built in code)
    # is already parsed.
    trigger = raw if isinstance(raw, Trigger) else parse_trigger(raw)
    if not possible_events(trigger):
        raise ValueError(
            f"trigger {trigger_to_raw(trigger)!r} can never hold: its parts need different "
            "events at once (a DONE and an ASK are never the same event)"
        )
    return trigger


TaskTrigger = Annotated[
    Trigger, PlainValidator(_trigger), PlainSerializer(trigger_to_raw, return_type=Any)
]
"""A phase's trigger: validated from its YAML form into the typed value, dumped back
to that form."""


def _parsed_tree(value: Any) -> EvalNode:
    # The loader parses every tree with its full path (phases[1].checks.all[0]), which
    # only it knows before the model is built; a raw tree here is a caller's mistake.
    if not isinstance(value, CheckLeaf | CheckGroup):
        raise ValueError("internal: check trees are parsed by app.tasks.loader (parse_tree)")
    return value


ParsedTree = Annotated[EvalNode, PlainValidator(_parsed_tree)]
"""A check tree already parsed into `app.checks.tree` nodes."""


class Phase(_Strict):
    message: Annotated[str, Field(min_length=1)]
    """The user message delivered when the trigger holds."""
    trigger: TaskTrigger
    """agent_done | agent_ask | {step_count: N} | {any: [...]} | {all: [...]}"""
    kind: PhaseKind | None = None
    """How the message is recorded. Default: 'answer' when delivered at an ASK,
    'feedback' at a DONE, 'interruption' after a GUI action."""
    checks: ParsedTree | None = None
    """Optional check tree (same shape as `evaluate`) scored on the desktop's state at
    the moment this phase is delivered; recorded apart from the final score."""


class Budget(_Strict):
    steps: Annotated[int, Field(ge=1, le=10_000)] = 100
    """Most agent turns (GUI actions, ASKs and DONEs) before the episode ends."""
    seconds: Annotated[float, Field(gt=0, le=86_400)] = 1800.0
    """Most wall-clock seconds from the end of setup before the episode ends."""


DEFAULT_SCREEN = (1280, 800)


class Screen(_Strict):
    """The screen a task needs: a demonstrated task's anchors and clicks were recorded
    at this size (fonts, DPI and theme are the desktop image's, fixed by its recipe)."""

    width: Annotated[int, Field(ge=320, le=7680)]
    height: Annotated[int, Field(ge=200, le=4320)]


class Task(_Strict):
    id: str
    """Unique, lowercase letters, digits and dashes; equals the file name."""
    app: Literal["gimp", "blender", "kdenlive", "web"]
    level: Literal["L1", "L2", "L3"]
    title: Annotated[str, Field(min_length=1)]
    instruction: Annotated[str, Field(min_length=1)]
    """u0: what to deliver, not which buttons to press."""
    setup: list[SetupStep] = []
    """s0: steps run in order after the desktop is reset."""
    phases: list[Phase] = []
    """Φ: later user messages, delivered in order by their triggers."""
    budget: Budget = Budget()
    screen: Screen | None = None
    """The screen size the task needs; an episode on a desktop of another size ends at
    once with an error naming both. None: any size (its desktops are made 1280×800)."""
    answer_schema: dict[str, Any] | None = None
    """A JSON schema for the answer the agent returns with DONE (text or JSON), for tasks
    that ask for a returned value; `answer_matches_schema` checks it by default."""
    evaluate: ParsedTree
    """R: a tree of checks (see docs/tasks.md)."""
    reference: str | None = None
    """The reference solution (scripted-agent file) relative to the task folder."""
    secrets: list[Annotated[str, Field(min_length=1)]] = []
    """Expected values an agent must not be able to type in (an answer the checks
    compare with): an episode whose agent typed one is flagged (integrity);
    the score is unchanged."""

    folder: Path = Path(".")
    """Set by the loader: the folder asset paths are relative to."""
    source: Path = Path("<memory>")
    """Set by the loader: the task file."""
    sha256: str = ""
    """Set by the loader: hash of the task file's bytes."""
    _lines: dict[str, int] = PrivateAttr(default_factory=dict)
    # Set by the loader: the line of each field in the file, for problems found after
    # the task is built (a duplicate id, a phase that can never fire).

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        if not TASK_ID_PATTERN.match(value):
            raise ValueError(
                f"{value!r} is not a valid id: use lowercase letters, digits and single dashes"
            )
        return value

    @field_validator("answer_schema")
    @classmethod
    def _a_json_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            # Imported here: only tasks that declare a schema need the library.
            from jsonschema import Draft202012Validator
            from jsonschema.exceptions import SchemaError

            try:
                Draft202012Validator.check_schema(value)
            except SchemaError as exc:
                raise ValueError(f"not a JSON schema: {exc.message}") from None
        return value

    @model_validator(mode="after")
    def _pages_in_web_tasks(self) -> Task:
        # A page step does nothing useful without a page, and a web task without one
        # would show the agent an empty desktop.
        opened = False
        for i, step in enumerate(self.setup):
            if isinstance(step, OpenPageStep):
                if self.app != "web":
                    raise ValueError(f"setup[{i}]: open_page is for 'app: web' tasks")
                opened = True
            elif isinstance(step, ResetPageStep) and not opened:
                raise ValueError(f"setup[{i}]: reset_page needs an open_page before it")
        if self.app == "web" and not opened:
            raise ValueError("setup: a web task opens its page with an open_page step")
        return self

    @property
    def screen_size(self) -> tuple[int, int]:
        return DEFAULT_SCREEN if self.screen is None else (self.screen.width, self.screen.height)

    @property
    def eval_tree(self) -> EvalNode:
        return self.evaluate

    def phase_tree(self, index: int) -> EvalNode | None:
        """The optional check tree of phase `index`, or None when it has none."""
        return self.phases[index].checks

    @property
    def field_lines(self) -> dict[str, int]:
        """Each field's line in the task file (`phases[1].trigger` → 14), as loaded."""
        return self._lines

    @property
    def interactive(self) -> bool:
        return bool(self.phases)
