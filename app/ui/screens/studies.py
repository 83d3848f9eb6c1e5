"""Studies: the researcher's view of each study's plan while its sessions run.

Read again every few seconds: a participant's session runs in its own process
(`deskloop study run`, the participant's browser view), so this screen follows the
store as that process writes it. What the researcher does to a participant's trial
reaches that process through the store too: a note on the trial's episode, and a
pause, resume or abort of the trial running now (`app.store.requests`, which the
trial's runner reads every second).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.markup import escape
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import DataTable, Header, Static

from app.core.errors import DeskLoopError
from app.core.vocabulary import EpisodeRequest
from app.metrics.tables import render_table
from app.store import Store
from app.store.records import EpisodeRecord
from app.studies.loader import load_study, study_files
from app.studies.model import Study
from app.studies.plans import ROW_HEADER, Progress, balance_so_far, progress
from app.ui.modals import ConfirmScreen
from app.ui.screens.base import LabFooter, LabScreen

REFRESH_SECONDS = 3.0
"""How often the plan is read again (sessions run in other processes)."""


@dataclass(frozen=True)
class StudyView:
    """One study as the screen shows it: its plan's progress, or why there is none."""

    study: Study
    people: list[Progress]
    problem: str | None = None


def read_study(study: Study, store: Store) -> StudyView:
    """The study's progress in `store`, or why there is none (no plan yet)."""
    try:
        return StudyView(study, progress(store, study))
    except DeskLoopError as exc:
        return StudyView(study, [], str(exc))


def trial_watch(store: Store, study_id: str, code: str) -> str:
    """What the participant's latest trial is doing, from its episode's record: its
    state, steps and messages so far, the last of each (the session runs elsewhere)."""
    latest = store.studies.latest_episode(study_id, code)
    if latest is None:
        return f"{code}: no trial yet"
    episode = store.get_episode(latest[0])
    state = "running" if latest[1] else f"{episode.status}, {episode.end_reason or 'no end'}"
    steps = store.steps(episode.id)
    messages = store.messages(episode.id)
    lines = [
        f"{code} · episode {episode.id} ({state}) · {episode.task_id} · "
        f"{len(steps)} steps · {len(messages)} messages"
    ]
    if steps:
        last = steps[-1]
        lines.append(f"last step: {last.description} ({last.actor})")
    if messages:
        said = messages[-1]
        text = " ".join(said.text.split())
        lines.append(f"last message: {said.role} {said.kind}: {text[:100]}")
    return "\n".join(lines)


def summary(view: StudyView) -> str:
    """Counts of participants by state, trials left, and the balance of condition
    orders among those done (each cell: participants)."""
    if view.problem is not None:
        return view.problem
    states = [p.state for p in view.people]
    counts = ", ".join(f"{states.count(s)} {s}" for s in dict.fromkeys(states)) or "nobody"
    left = sum(len(p.trials) - p.done for p in view.people if p.state != "withdrawn")
    lines = [f"{len(view.people)} participants: {counts}; {left} trials left"]
    header, *cells = balance_so_far(view.study, view.people).table()
    if cells and len(header) > 1:
        lines += ["", "conditions by position among those done (each cell: participants)"]
        lines.append(render_table(header, cells))
    return "\n".join(lines)


class StudiesScreen(LabScreen):
    TITLE = "Studies"
    HELP = """\
The studies in `studies/` and where each participant stands, read from the
database every few seconds (sessions run in their own process: `deskloop study
run STUDY --participant P01` opens the participant's view in a browser).

- **↑/↓** pick a study; its participants show below, with their state
  (planned, consented, mid-way, done, withdrawn), their condition order, trials
  done, tries cut off, and the next trial.
- **g** read the studies and the database again now.
- On a participant (**tab** to their table), their latest trial is followed
  under the table (its steps and messages so far, the last of each). **p**
  pauses the trial they are in (the agent takes no step; **p** again resumes),
  **x** aborts it (asks first: `y` aborts; the trial is recorded as aborted),
  **n** writes a note and tags on their
  latest trial's episode. The participant's process acts within a second.

Planning, pilots, exports and withdrawals are `deskloop study …` commands.
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("g", "reload", "Reload"),
        Binding("p", "pause", "Pause/resume"),
        Binding("x", "abort", "Abort trial"),
        Binding("n", "notes", "Note"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.studies: list[Study] = []
        self.problems: list[str] = []
        self.views: dict[str, StudyView] = {}
        self.loaded = False
        """Whether the studies and their plans have been read once."""
        self._watched: tuple[str, str] | None = None
        """The study and participant whose latest trial the last read followed."""

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical():
            yield DataTable(id="studies-table", cursor_type="row", zebra_stripes=True)
            yield DataTable(id="participants-table", cursor_type="row", zebra_stripes=True)
            yield Static("", id="trial-watch")
            yield Static("", id="study-summary")
        yield LabFooter()

    def on_mount(self) -> None:
        self.query_one("#studies-table", DataTable).add_columns(
            "study", "conditions", "design", "participants"
        )
        self.query_one("#participants-table", DataTable).add_columns(*ROW_HEADER)
        self.action_reload()
        self.set_interval(REFRESH_SECONDS, self.action_reload)

    def on_screen_resume(self) -> None:
        self.action_reload()

    def action_reload(self) -> None:
        self._watched = self.picked()
        self._read(self.lab.studies_dir, self._watched)

    @on(DataTable.RowHighlighted, "#participants-table")
    def _participant_picked(self) -> None:
        # Refilling the table highlights a row too: read again only for another person.
        if self.picked() != self._watched:
            self.action_reload()

    @work(thread=True, exclusive=True, group="studies", exit_on_error=False,
          description="reading the studies")  # fmt: skip
    def _read(self, folder: Path, watched: tuple[str, str] | None) -> None:
        studies: list[Study] = []
        problems: list[str] = []
        if folder.is_dir():
            for path in study_files(folder):
                try:
                    studies.append(load_study(path))
                except DeskLoopError as exc:
                    problems.append(str(exc).splitlines()[0])
        store = self.lab.store
        views = {study.id: read_study(study, store) for study in studies}
        watch = "" if watched is None else trial_watch(store, *watched)
        self.app.call_from_thread(self._show, studies, problems, views, watch)

    def _show(
        self,
        studies: list[Study],
        problems: list[str],
        views: dict[str, StudyView],
        watch: str = "",
    ) -> None:
        self.studies, self.problems, self.views = studies, problems, views
        self.query_one("#trial-watch", Static).update(escape(watch))
        self.loaded = True
        table = self.query_one("#studies-table", DataTable)
        row = table.cursor_row
        table.clear()
        for study in studies:
            view = views[study.id]
            people = "no plan" if view.problem else str(len(view.people))
            table.add_row(
                study.id,
                ", ".join(c.id for c in study.conditions),
                f"{study.design.participants}, {study.design.counterbalance}",
                people,
            )
        if studies:
            table.move_cursor(row=min(row, len(studies) - 1))
        self.show_study()

    @on(DataTable.RowHighlighted, "#studies-table")
    def _picked(self) -> None:
        self.show_study()

    def show_study(self) -> None:
        participants = self.query_one("#participants-table", DataTable)
        # The table is filled again every few seconds: the researcher's place in it stays.
        place = participants.cursor_row
        participants.clear()
        text = self.query_one("#study-summary", Static)
        folder = self.lab.studies_dir
        if not self.studies:
            found = "\n".join(escape(p) for p in self.problems)
            text.update(
                f"No studies in {escape(str(folder))}: write one (docs/studies.md) and "
                f"check it with deskloop study validate.\n{found}".rstrip()
            )
            return
        row = self.query_one("#studies-table", DataTable).cursor_row
        view = self.views[self.studies[min(row, len(self.studies) - 1)].id]
        for person in view.people:
            participants.add_row(*person.row())
        if view.people:
            participants.move_cursor(row=min(max(place, 0), len(view.people) - 1))
        text.update(escape(summary(view)))

    # ------------------------------------------------------------ a participant

    def picked(self) -> tuple[str, str] | None:
        """The study and participant code under the participants table's cursor."""
        if not self.studies:
            return None
        row = self.query_one("#studies-table", DataTable).cursor_row
        view = self.views[self.studies[min(row, len(self.studies) - 1)].id]
        place = self.query_one("#participants-table", DataTable).cursor_row
        if not view.people or not 0 <= place < len(view.people):
            return None
        return view.study.id, view.people[place].participant.code

    def action_pause(self) -> None:
        if (who := self.picked()) is not None:
            self._ask(*who, None)

    def action_abort(self) -> None:
        who = self.picked()
        if who is None or isinstance(self.app.screen, ConfirmScreen):
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._ask(*who, "abort")

        question = (
            f"{who[1]}'s trial in {who[0]} ends now, recorded as aborted; their session "
            "goes on to what follows it."
        )
        self.app.push_screen(ConfirmScreen("Abort the trial?", question, "Abort"), answered)

    @work(thread=True, group="requests", exit_on_error=False, description="asking the trial")
    def _ask(self, study_id: str, code: str, request: EpisodeRequest | None) -> None:
        """Write `request` (None: pause, or resume when the last request paused) for
        the participant's running trial."""
        store = self.lab.store
        latest = store.studies.latest_episode(study_id, code)
        if latest is None or not latest[1]:
            self.app.call_from_thread(
                self.notify, f"{code} has no trial running.", severity="warning"
            )
            return
        episode, _ = latest
        if request is None:
            asked = [r for _, r in store.episode_requests(episode)]
            request = "resume" if asked and asked[-1] == "pause" else "pause"
        try:
            store.request_episode(episode, request)
        except DeskLoopError as exc:
            self.app.call_from_thread(self.notify, str(exc), severity="error")
            return
        said = {"pause": "Pausing", "resume": "Resuming", "abort": "Aborting"}[request]
        self.app.call_from_thread(
            self.notify, f"{said} {code}'s trial (episode {episode})…", timeout=4
        )

    def action_notes(self) -> None:
        if (who := self.picked()) is not None:
            self._annotate(*who)

    @work(thread=True, group="requests", exit_on_error=False, description="finding the trial")
    def _annotate(self, study_id: str, code: str) -> None:
        store = self.lab.store
        latest = store.studies.latest_episode(study_id, code)
        if latest is None:
            self.app.call_from_thread(
                self.notify, f"{code} has no trial yet to note.", severity="warning"
            )
            return
        episode = store.get_episode(latest[0])
        self.app.call_from_thread(self._edit_notes, episode)

    def _edit_notes(self, episode: EpisodeRecord) -> None:
        from app.ui.screens.notes import edit_notes

        edit_notes(self, episode, lambda stored: self.notify(f"Noted episode {stored.id}."))
