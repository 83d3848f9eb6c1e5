"""Studies: the researcher's view of each study's plan while its sessions run.

Read-only, and read again every few seconds: a participant's session runs in its own
process (`deskloop study run`, the participant's browser view), so this screen follows
the store as that process writes it.
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
from app.metrics.tables import render_table
from app.store import Store
from app.studies.loader import load_study, study_files
from app.studies.model import Study
from app.studies.plans import ROW_HEADER, Progress, balance_so_far, progress
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

Planning, pilots, exports and withdrawals are `deskloop study …` commands.
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("g", "reload", "Reload"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.studies: list[Study] = []
        self.problems: list[str] = []
        self.views: dict[str, StudyView] = {}
        self.loaded = False
        """Whether the studies and their plans have been read once."""

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical():
            yield DataTable(id="studies-table", cursor_type="row", zebra_stripes=True)
            yield DataTable(id="participants-table", cursor_type="row", zebra_stripes=True)
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
        self._read(self.lab.studies_dir)

    @work(thread=True, exclusive=True, group="studies", exit_on_error=False,
          description="reading the studies")  # fmt: skip
    def _read(self, folder: Path) -> None:
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
        self.app.call_from_thread(self._show, studies, problems, views)

    def _show(self, studies: list[Study], problems: list[str], views: dict[str, StudyView]) -> None:
        self.studies, self.problems, self.views = studies, problems, views
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
        text.update(escape(summary(view)))
