"""The composition root: what an episode is made of, decided in one place.

Six entry points start episodes: `deskloop run` (and `demo`), `deskloop human`,
`deskloop tasks verify`, the TUI's episode session, the Gymnasium environment and a
batch. Each hands `launch` a task, a backend, an agent spec (`app.agents.spec`), a user
spec, the store and the run's options, and gets back an `Episode` wired up and ready to
run: the desktop of the task's VM image, the agent (`build_agent`, or a person on a
pass-through desktop), the user (simulated, a person or an LLM, handed the episode's
conversation when it reads it), and the runner that records it in the store. Callers
that must hold the agent or the user before the episode is launched (the TUI shows
them at once; a batch checks every spec before anything runs) build them with
`build_agent`, `person_agent` and `make_user` from here. Callers that keep desktops of
their own (the TUI's pool, a batch's pool, the environment between resets) pass their
desktop in, and ask `desktop_spec` which desktop a task needs, so no caller can boot the
wrong image: four of them once started the GIMP image for every task on libvirt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.agents.base import Agent
from app.agents.factory import make_agent
from app.agents.person import PersonAgent
from app.agents.spec import AGENT_SPEC_TYPES, AgentSpec, PersonSpec, parse_agent_spec
from app.core.conversation import Message
from app.core.errors import AgentError, DeskLoopError
from app.core.settings import read_settings
from app.desktops.base import Desktop
from app.desktops.factory import make_desktop
from app.desktops.pass_through import PassThroughDesktop
from app.episode.control import EpisodeControl, RunOptions
from app.episode.events import EpisodeResult, RunnerEvent
from app.episode.judge import check_judge_configured
from app.episode.prepare import PreparedStart
from app.episode.runner import EpisodeRunner
from app.store import Store
from app.tasks.model import Task
from app.users.person import PersonUser
from app.users.simulated import ReadsConversation, SimulatedUser, User

if TYPE_CHECKING:
    from app.agents.adapters import ModelConfig
    from app.rfb.proxy import ProxyAddress

USER_SPECS = ("simulated", "person", "llm")
"""simulated (the task's phase script) | person (replies from a UI) | llm (app.users.llm)."""
LLM_USER_CACHE = "llm-user-cache"
"""The LLM user's answers are cached in this folder beside the database."""


@dataclass(frozen=True)
class DesktopSpec:
    """The desktop an episode needs (and what a batch asks its desktop factory for)."""

    backend: str
    uri: str | None = None
    """The libvirt URI (a batch's pool host); None: the backend's default."""
    index: int = 0
    """The desktop's place on its host (0 .. capacity-1). Desktops that run at once
    on one host differ in it, and so do their VM names."""
    image: str | None = None
    """The VM image (libvirt: $DESKLOOP_IMAGE, else the task's app); None elsewhere."""
    width: int = 1280
    height: int = 800


def task_image(backend: str, task: Task) -> str | None:
    """The VM image an episode of `task` needs: a VM image per app (gimp, blender,
    kdenlive, web); $DESKLOOP_IMAGE overrides (an image with every app, a test image).
    None: the backend has no images (one local desktop runs every app)."""
    if backend != "libvirt":
        return None
    return read_settings().image or task.app


def desktop_spec(
    backend: str,
    task: Task,
    *,
    uri: str | None = None,
    index: int = 0,
    width: int | None = None,
    height: int | None = None,
) -> DesktopSpec:
    """What desktop an episode of `task` runs on: of the task's screen size unless
    `width` and `height` say otherwise."""
    default_width, default_height = task.screen_size
    return DesktopSpec(
        backend, uri, index, task_image(backend, task), width or default_width,
        height or default_height,
    )  # fmt: skip


def make_spec_desktop(spec: DesktopSpec, progress: Callable[[str], None] | None = None) -> Desktop:
    """A new, not yet started desktop as `spec` says (`app.desktops.factory`);
    `progress` hears its long operations (default: stderr)."""
    return make_desktop(
        spec.backend,
        width=spec.width,
        height=spec.height,
        image=spec.image,
        uri=spec.uri,
        index=spec.index,
        progress=progress,
    )


def task_desktop(
    backend: str, task: Task, *, width: int | None = None, height: int | None = None
) -> Desktop:
    """A new desktop for episodes of `task` (libvirt: a VM of its image), of the task's
    screen size unless told otherwise."""
    return make_spec_desktop(desktop_spec(backend, task, width=width, height=height))


def fits(desktop: Desktop, spec: DesktopSpec) -> bool:
    """Whether a desktop made earlier may run an episode that needs `spec`: a VM only
    if it is of the image (the app the task opens is installed only there)."""
    return spec.image is None or desktop.info().details.get("image") == spec.image


def make_user(
    spec: str,
    task: Task,
    *,
    cache_dir: Path,
    llm: dict[str, Any] | None = None,
    choices: Sequence[str] = USER_SPECS,
) -> User:
    """The user named by `spec` for `task`. `llm` configures the LLM user
    (`LLMUserConfig.from_json`), which caches its answers in `cache_dir`; `choices`
    narrows the specs a caller accepts (a batch has no person to wait for).

    Raises:
        DeskLoopError: a spec not in `choices`.
    """
    if spec not in choices:
        expected = " or ".join(filter(None, [", ".join(choices[:-1]), choices[-1]]))
        raise DeskLoopError(f"unknown user {spec!r}; expected {expected}")
    if spec == "person":
        return PersonUser()
    if spec == "llm":
        # Imported here: only the LLM user needs the endpoint client (httpx, tenacity).
        from app.users.llm import LLMUser, LLMUserConfig

        return LLMUser(task, LLMUserConfig.from_json(llm or {}), cache_dir=cache_dir)
    return SimulatedUser()


def build_agent(
    spec: AgentSpec | str,
    task: Task,
    store: Store | None = None,
    *,
    openai: ModelConfig | None = None,
    agent_timeout: float | None = None,
) -> Agent:
    """The agent `spec` names for `task` (`app.agents.factory.make_agent`: `openai` is
    a model agent's config, `agent_timeout` its deadline; a replay reads `store`).

    Raises:
        AgentError: a bad spec, or a person: a person drives a desktop, so `launch` (or
            `person_agent`) builds them with one.
    """
    if isinstance(spec, str):
        spec = parse_agent_spec(spec)
    if isinstance(spec, PersonSpec):
        raise AgentError("person: a person is built with the desktop they drive (person_agent)")
    return make_agent(spec, task, openai, agent_timeout=agent_timeout, store=store)


def person_agent(
    desktop: Desktop,
    spec: PersonSpec | None = None,
    *,
    announce: Callable[[ProxyAddress], None] | None = None,
) -> PersonAgent:
    """A person as the agent of `desktop`, through a VNC viewer on a recording proxy
    (on `spec.port`; `announce` is told its address) or the TUI's live view. `launch`
    runs its episode on a pass-through desktop."""
    port = spec.port if spec is not None else 0
    return PersonAgent(desktop, port=port, announce=announce)


def conversation_of(runner: EpisodeRunner) -> Callable[[], Sequence[Message]]:
    """The episode's conversation so far, read when it is needed (empty before the
    runner has begun)."""
    return lambda: runner.protocol.conversation if runner.protocol is not None else []


def llm_cache_dir(store: Store) -> Path:
    """Where the LLM user of episodes recorded in `store` caches its answers."""
    return store.root / LLM_USER_CACHE


@dataclass
class Episode:
    """An episode wired up by `launch`; `run()` runs it once."""

    runner: EpisodeRunner
    desktop: Desktop
    """The desktop the runner acts on (a person's: a pass-through to theirs)."""
    closes_desktop: bool
    """Whether `run` closes the desktop when the episode ends (launch made it)."""
    agent: Agent

    @property
    def person(self) -> PersonAgent | None:
        """The person who is the agent (their commands go to it), if one is."""
        return self.agent if isinstance(self.agent, PersonAgent) else None

    @property
    def episode_id(self) -> int | None:
        """Known once the runner has recorded the episode's start."""
        return self.runner.episode_id

    async def run(self) -> EpisodeResult:
        try:
            return await self.runner.run()
        finally:
            if self.closes_desktop:
                await self.desktop.close()


def launch(
    task: Task,
    store: Store,
    *,
    backend: str,
    agent: AgentSpec | str | Agent,
    user: str | User = "simulated",
    desktop: Desktop | None = None,
    openai: ModelConfig | None = None,
    announce: Callable[[ProxyAddress], None] | None = None,
    options: RunOptions | None = None,
    progress: Callable[[str], None] | None = None,
    on_event: Callable[[RunnerEvent], None] | None = None,
    control: EpisodeControl | None = None,
    prepared: PreparedStart | None = None,
) -> Episode:
    """An episode of `task` on `backend`, recorded in `store`, ready to run.

    `agent` is a spec (`build_agent`, with `openai` for the model agent; a person's
    proxy address goes to `announce`) or an agent already built; `user` a spec for
    `make_user` or a user already built. Without `desktop`, a new one of the task's
    image is made, and closed when the episode ends; a desktop passed in stays its
    owner's. A person's input reaches the desktop as they make it, so their episode
    runs on a pass-through (`app.desktops.pass_through`). The agent and the user are
    built first, so a bad spec fails before any desktop exists; a user that reads the
    conversation is handed the runner's. `options`, `progress`, `on_event` and
    `control` go to the runner (`EpisodeRunner`), and so does `prepared`: `desktop`
    already brought to the task's start state (`app.episode.prepare.prepare_start`, a
    batch's warm pool), so the episode starts on it without a reset and records the
    setup done ahead.

    Raises:
        AgentError: a bad agent spec. DeskLoopError: a bad user spec or backend.
    """
    if isinstance(agent, str):
        agent = parse_agent_spec(agent)
    person = agent if isinstance(agent, PersonSpec) else None
    built: Agent | None = None
    if isinstance(agent, AGENT_SPEC_TYPES):
        if person is None:
            built = build_agent(agent, task, store, openai=openai)
    else:
        built = agent
    if isinstance(user, str):
        user = make_user(user, task, cache_dir=llm_cache_dir(store))
    # A judge that counts, and none to ask: refused now, not after the whole episode.
    check_judge_configured(task, (options or RunOptions()).judge)
    closes = desktop is None
    if desktop is None:
        desktop = task_desktop(backend, task)
    if built is None:
        built = person_agent(desktop, person, announce=announce)
    acts_on = PassThroughDesktop(desktop) if isinstance(built, PersonAgent) else desktop
    runner = EpisodeRunner(
        task,
        acts_on,
        built,
        user,
        store,
        backend=backend,
        options=options,
        progress=progress,
        on_event=on_event,
        control=control,
        prepared=prepared,
    )
    if isinstance(user, ReadsConversation):
        user.bind_conversation(conversation_of(runner))
    return Episode(runner, acts_on, closes, built)
