"""The DeskLoop terminal UI: one Textual app, six screens over the lab's services.

Screens are thin: they call services (store queries, the task loader, the desktop
pool, an `EpisodeSession`) and show the results. Anything slow runs as a worker
that ends by posting a message or updating the service's state; one
`Worker.StateChanged` handler turns every failed worker into an error dialog.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from textual.app import App
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from app.core.errors import DeskLoopError
from app.core.vocabulary import UserMode
from app.desktops.inventory import BackendListing, list_libvirt
from app.store import Store
from app.tasks.loader import load_tasks
from app.tasks.model import Task
from app.ui.graphics import Graphics
from app.ui.modals import ConfirmScreen, ErrorScreen, HelpScreen
from app.ui.screens.tasks import TasksScreen
from app.ui.services.desktops import DesktopPool, LibvirtDesktops
from app.ui.services.novnc import NoVncServers

if TYPE_CHECKING:
    from app.agents.base import Agent
    from app.rfb.client import VncEndpoint
    from app.ui.services.authoring import RecordingSession
    from app.ui.services.episode import EpisodeSession


def keep_alt_letters() -> None:
    """Make a terminal's Alt+F and Alt+B the keys alt+f and alt+b again.

    A terminal sends Alt+letter as ESC and the letter. Textual reads `ESC f` and
    `ESC b` as ctrl+right and ctrl+left (iTerm's word-motion keys), so a person taking
    over a desktop could not open GIMP's File menu: Alt+F arrived as ctrl+right while
    Alt+I was right. DeskLoop's text boxes lose no motion by this (a real ctrl+right
    comes as its own escape sequence, which is kept).
    """
    from textual import _ansi_sequences

    # Typed as a Mapping; it is the module's one dict, which the parser reads per key.
    sequences = cast(dict[str, object], _ansi_sequences.ANSI_SEQUENCES_KEYS)
    for sequence in ("\x1bf", "\x1bb"):
        sequences.pop(sequence, None)


keep_alt_letters()


# The modes' screens other than Tasks, each imported when its mode is first shown: the
# first screen needs none of them, and their modules (the live view, the episode
# runner, the authoring tools) were a third of the TUI's start-up.


def _desktops_screen() -> Screen[Any]:
    from app.ui.screens.desktops import DesktopsScreen

    return DesktopsScreen()


def _live_screen() -> Screen[Any]:
    from app.ui.screens.live import LiveScreen

    return LiveScreen()


def _episodes_screen() -> Screen[Any]:
    from app.ui.screens.episodes import EpisodesScreen

    return EpisodesScreen()


def _results_screen() -> Screen[Any]:
    from app.ui.screens.results import ResultsScreen

    return ResultsScreen()


def _studies_screen() -> Screen[Any]:
    from app.ui.screens.studies import StudiesScreen

    return StudiesScreen()


def _author_screen() -> Screen[Any]:
    from app.ui.screens.author import AuthorScreen

    return AuthorScreen()


SCREEN_KEYS = """
**Screens** (from anywhere, when the cursor is not in a text box):
**t** Tasks · **l** Live · **d** Desktops · **e** Episodes · **r** Results ·
**a** Author · **u** Studies ·
**?** this help · **q** quit.
"""


class DeskLoopApp(App[None]):
    """`deskloop tui`. Built by the CLI and by the tests with the same arguments."""

    TITLE = "DeskLoop"
    MODES: ClassVar[dict[str, str | Callable[[], Screen[Any]]]] = {
        "desktops": _desktops_screen,
        "tasks": TasksScreen,
        "live": _live_screen,
        "episodes": _episodes_screen,
        "results": _results_screen,
        "author": _author_screen,
        "studies": _studies_screen,
    }
    CSS_PATH = "deskloop.tcss"
    # Every action has a key in the footer; the palette's ^p would only crowd it.
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        # The screen keys share one footer entry, so every screen's own keys fit at 100
        # columns; `?` lists them all.
        Binding("d", "switch_mode('desktops')", "Desktops", show=False),
        Binding("t", "switch_mode('tasks')", "Tasks", show=False),
        Binding("l", "switch_mode('live')", "Live", show=False),
        Binding("e", "switch_mode('episodes')", "Episodes", show=False),
        Binding("r", "switch_mode('results')", "Results", show=False),
        Binding("a", "switch_mode('author')", "Author", show=False),
        Binding("u", "switch_mode('studies')", "Studies", show=False),
        Binding("question_mark", "help", "Help · d t l e r a u", key_display="?"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(
        self,
        *,
        db: Path | str,
        tasks_dir: Path | str,
        studies_dir: Path | str = "studies",
        backend: str = "local",
        start_mode: str = "tasks",
        libvirt_listing: Callable[[], BackendListing] = list_libvirt,
        graphics: Graphics | None = None,
    ) -> None:
        """`libvirt_listing` lists the libvirt desktops made outside this session
        (blocking; run in a thread); tests about the screens pass a fixed one.
        `graphics`: how the Live screen draws frames, chosen by the CLI before
        Textual starts (`choose_graphics`); half blocks by default."""
        super().__init__()
        self.db_path = Path(db)
        self.tasks_dir = Path(tasks_dir)
        self.studies_dir = Path(studies_dir)
        """Where the Studies screen finds the study files (`deskloop study --studies-dir`)."""
        self.backend = backend
        self.start_mode = start_mode
        self.store = Store(self.db_path)
        self.pool = DesktopPool(backend)
        self.vms = LibvirtDesktops(libvirt_listing)
        self.graphics = graphics or Graphics("halfblock", "the default")
        self._listing_vms = False
        self.session: EpisodeSession | None = None
        self.live_desktop: str | None = None
        """A desktop to watch when no episode runs (Desktops screen, 'view live')."""
        self.recording: RecordingSession | None = None
        """The demonstration the Author screen records (one at a time)."""
        self.novnc = NoVncServers()
        """noVNC servers started by `o` where no native viewer exists (one per desktop)."""
        self.tasks: list[Task] = []
        self.task_errors: list[DeskLoopError] = []
        self.reload_tasks()

    def reload_tasks(self) -> None:
        if self.tasks_dir.is_dir():
            tasks, errors = load_tasks(self.tasks_dir)
        else:
            tasks, errors = [], []
        self.tasks, self.task_errors = tasks, list(errors)

    def on_mount(self) -> None:
        self.sub_title = f"backend: {self.backend} · database: {self.db_path}"
        self.switch_mode(self.start_mode)
        self.set_interval(1.0, self.prune_viewers, name="prune noVNC")

    def episode_on(self, name: str) -> EpisodeSession | None:
        """The episode running on the pool's desktop `name`, if one does."""
        session = self.session
        entry = self.pool.entries.get(name)
        if session is None or session.ended or entry is None:
            return None
        return session if entry.desktop is session.desktop else None

    async def viewer_endpoint(self, name: str) -> VncEndpoint | None:
        """Where a person's viewer of the pool's desktop `name` connects: while an
        episode runs on it, the episode's recording proxy (started now if need be), so
        their input is recorded as theirs; else the desktop's own VNC server."""
        session = self.episode_on(name)
        if session is not None:
            return await session.person_endpoint()
        entry = self.pool.entries.get(name)
        return None if entry is None else entry.info().vnc

    def prune_viewers(self) -> None:
        """Stop the noVNC servers of the pool's desktops that serve what is no longer
        the way in: a stopped or reset desktop's old port, the desktop's own server
        once an episode runs on it (input there would bypass the recording proxy),
        or an ended episode's proxy."""
        wanted: dict[str, VncEndpoint | None] = {}
        for name in self.novnc.servers:
            if name not in self.pool.entries:
                continue  # a VM made elsewhere: the Desktops screen's own listing
            session = self.episode_on(name)
            if session is not None:
                person_input = session.person_input
                wanted[name] = None if person_input is None else person_input.endpoint
            else:
                wanted[name] = self.pool.entries[name].info().vnc
        for name in self.novnc.keep_only(wanted):
            self.notify(
                f"noVNC for {name} stopped: it served what is no longer the desktop's way "
                "in (o serves it again).",
                timeout=8,
            )

    async def on_unmount(self) -> None:
        if self.session is not None and not self.session.ended:
            self.session.control.abort()
        if self.recording is not None and not self.recording.ended:
            self.recording.end("the TUI quit")
        self.novnc.stop_all()
        await self.pool.close_all()
        self.store.close()

    async def action_quit(self) -> None:
        """Quit; while an episode runs or a demonstration is recorded, ask first (it
        would be aborted: recorded as such, its desktop stopped)."""
        running = []
        if self.session is not None and not self.session.ended:
            running.append(f"the episode of {self.session.task.id} (recorded as aborted)")
        if self.recording is not None and not self.recording.ended:
            running.append("the recording of a demonstration (what was recorded is kept)")
        if not running:
            self.exit()
            return
        if isinstance(self.screen, ConfirmScreen):
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.exit()

        question = "Quitting ends " + " and ".join(running) + ", and stops this session's desktops."
        self.push_screen(ConfirmScreen("Quit DeskLoop?", question, "Quit"), answered)

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        text = getattr(self.screen, "HELP", None) or "No help for this screen."
        note = getattr(self.screen, "help_note", None)
        if callable(note):
            text += "\n" + str(note())
        text += SCREEN_KEYS
        title = getattr(self.screen, "TITLE", None) or "DeskLoop"
        self.push_screen(HelpScreen(str(title), str(text)))

    def refresh_vms(self) -> None:
        """List the libvirt desktops again, in a thread (one listing at a time); the
        Desktops screen is told when the listing arrives."""
        if self._listing_vms:
            return
        self._listing_vms = True
        self.run_worker(
            self.vms.refresh,
            thread=True,
            group="vm-list",
            description="listing libvirt desktops",
            exit_on_error=False,
        )

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place a failed worker (the app's or a screen's) becomes an error dialog."""
        if event.worker.group == "vm-list" and event.worker.is_finished:
            from app.ui.screens.desktops import DesktopsScreen

            self._listing_vms = False
            if event.state == WorkerState.SUCCESS:
                self.vms.listing = event.worker.result
                for screen in self.screen_stack:
                    if isinstance(screen, DesktopsScreen):
                        screen.post_message(DesktopsScreen.Changed())
        if event.state != WorkerState.ERROR:
            return
        error = event.worker.error
        if isinstance(error, DeskLoopError):
            title, text = error.title, str(error)
        else:
            title, text = type(error).__name__, str(error)
        self.push_screen(
            ErrorScreen(f"{event.worker.description or 'operation'} failed: {title}", text)
        )

    # -- episodes -------------------------------------------------------------------

    def start_episode(
        self,
        task: Task,
        agent_spec: str,
        user_mode: UserMode,
        agent_timeout: float | None = None,
        *,
        endpoint: dict[str, str] | None = None,
        llm_user: dict[str, str] | None = None,
    ) -> EpisodeSession:
        """Start an episode on the task's desktop (`DesktopPool.for_task`) and show it on
        the Live screen; `agent_timeout` is a model agent's deadline per call (None: its
        default), `endpoint` its adapter, model, base URL and key variable
        (`app.agents.factory.endpoint_config`), `llm_user` the LLM user's endpoint
        (`LLMUserConfig` fields; None: the user `user_mode` names)."""
        if self.session is not None and not self.session.ended:
            raise DeskLoopError("an episode is already running; abort it or wait for its end")
        from app.agents.factory import endpoint_config
        from app.agents.spec import PersonSpec, parse_agent_spec
        from app.episode.launch import build_agent, person_agent
        from app.ui.services.episode import HUMAN, EpisodeSession

        # A bad spec fails here, before a desktop starts.
        spec = PersonSpec() if agent_spec == HUMAN else parse_agent_spec(agent_spec)
        agent: Agent | None = None
        if not isinstance(spec, PersonSpec):
            model = endpoint_config(spec, **(endpoint or {}))
            agent = build_agent(spec, task, self.store, openai=model, agent_timeout=agent_timeout)
        entry, started_here = self.pool.for_task(task)
        if agent is None:
            # `deskloop human` in the TUI: the person is the agent, through the live
            # view (take-over) or a VNC viewer on the agent's recording proxy; their
            # input reaches the desktop as they make it, and launch runs the episode
            # on a pass-through (as the CLI's).
            agent = person_agent(entry.desktop)
        session = EpisodeSession(
            task=task,
            agent_spec=agent_spec,
            user_mode=user_mode,
            store=self.store,
            desktop=entry.desktop,
            backend=self.backend,
            agent=agent,
            llm_user=llm_user,
        )
        self.session = session
        self.live_desktop = None

        async def run() -> None:
            entry.busy = "running an episode"
            try:
                await session.run()
            finally:
                entry.busy = None
                entry.episode = None
                # A desktop the person started before stays as they left it.
                if started_here:
                    await entry.desktop.close()

        def note_episode(_event: object) -> None:
            entry.episode = session.episode_id

        session.listeners.append(note_episode)
        self.run_worker(
            run(), group="episode", description=f"episode of {task.id}", exit_on_error=False
        )
        self.show_live()
        return session

    def watch_desktop(self, name: str) -> None:
        if self.session is not None and self.session.ended:
            # The Live screen shows what it watches now, not the last episode's header.
            self.session = None
        self.live_desktop = name
        self.show_live()

    def show_live(self) -> None:
        from app.ui.screens.live import LiveScreen

        if self.current_mode == "live" and isinstance(self.screen, LiveScreen):
            self.screen.attach()  # no ScreenResume when the mode does not change
        else:
            self.switch_mode("live")
