"""The Studies screen follows a study's plan as another process writes it: who is
planned, consented or mid-way, and their condition order, read again on its own."""

from __future__ import annotations

import shutil
from pathlib import Path

from textual.widgets import DataTable

from app.store import Store
from app.studies.loader import load_study
from app.studies.plans import plan_in_store
from app.ui.app import DeskLoopApp
from app.ui.screens.studies import StudiesScreen
from tests.ui.helpers import screen_text, wait_until

ROOT = Path(__file__).resolve().parents[2]


def _studies(folder: Path) -> Path:
    shutil.copytree(ROOT / "studies", folder)
    (folder / "broken.yaml").write_text("id: broken\nconditions: 3\n")
    return folder


async def test_the_studies_screen_follows_the_plan(tmp_path: Path) -> None:
    studies = _studies(tmp_path / "studies")
    study = load_study(studies / "ask-or-not.yaml")
    db = tmp_path / "lab.db"
    with Store(db) as store:
        _plan, codes = plan_in_store(store, study, 3)
        store.studies.record_consent(study.id, "P01")
        store.studies.start_try(study.id, "P01", 0)
        participants = store.studies.participants(study.id)
        trials = len(store.studies.trials(study.id, "P01"))
    app = DeskLoopApp(db=db, tasks_dir=ROOT / "tasks", studies_dir=studies, start_mode="studies")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, StudiesScreen)
        await wait_until(pilot, lambda: screen.loaded, 10, "the studies read")
        studies_table = screen.query_one("#studies-table", DataTable)
        assert studies_table.row_count == 1  # the broken file is left out
        people = screen.query_one("#participants-table", DataTable)
        rows = [[str(c) for c in people.get_row_at(i)] for i in range(people.row_count)]
        assert [(r[0], r[1]) for r in rows] == [
            ("P01", "mid-way"),
            ("P02", "planned"),
            ("P03", "planned"),
        ]
        assert [r[2] for r in rows] == [" → ".join(p.conditions) for p in participants]
        assert [r[3] for r in rows] == [f"0/{trials}"] * 3
        assert "3 participants: 1 mid-way, 2 planned" in screen_text(app)
        # Another process (a participant's session) consents P02: the screen follows.
        with Store(db) as store:
            store.studies.record_consent(study.id, "P02")

        def p02() -> str:
            return str(people.get_row_at(1)[1]) if people.row_count > 1 else ""

        await wait_until(pilot, lambda: p02() == "consented", 20, "P02 shown consented")
        assert codes == ["P01", "P02", "P03"]


async def test_the_researcher_pauses_aborts_and_notes_a_participants_trial(
    tmp_path: Path,
) -> None:
    """On a participant: p asks their running trial to pause, p again to resume, x
    (confirmed) to abort, each a request the trial's runner reads from the store;
    n writes a note on their latest trial's episode."""
    studies = _studies(tmp_path / "studies")
    study = load_study(studies / "ask-or-not.yaml")
    db = tmp_path / "lab.db"
    with Store(db) as store:
        plan_in_store(store, study, 2)
        store.studies.record_consent(study.id, "P02")
        store.studies.start_try(study.id, "P02", 0)
        # P02's trial, as its runner in the participant's process records it.
        episode = store.start_episode(
            task_id="t", task_path="t.yaml", task_sha256="0" * 64, app="gimp", level="L1",
            interactive=True, agent="null", user_mode="person", backend="local",
            config={"study": {"study": study.id, "participant": "P02", "position": 0}},
        )  # fmt: skip
    app = DeskLoopApp(db=db, tasks_dir=ROOT / "tasks", studies_dir=studies, start_mode="studies")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, StudiesScreen)
        await wait_until(pilot, lambda: screen.loaded, 10, "the studies read")
        people = screen.query_one("#participants-table", DataTable)
        people.focus()

        def asked() -> list[str]:
            with Store(db) as store:
                return [r for _, r in store.episode_requests(episode)]

        await pilot.press("p")  # on P01, who has no trial running: nothing is asked
        await wait_until(
            pilot,
            lambda: any("P01 has no trial running" in str(n.message) for n in app._notifications),
            10,
            "the warning",
        )
        people.move_cursor(row=1)
        # Their latest trial is followed under the table.
        await wait_until(
            pilot,
            lambda: "P02 · episode 1 (running) · t · 0 steps" in screen_text(app),
            10,
            "P02's trial followed",
        )
        await pilot.press("p")
        await wait_until(pilot, lambda: asked() == ["pause"], 10, "the pause request")
        await pilot.press("p")
        await wait_until(pilot, lambda: asked() == ["pause", "resume"], 10, "the resume")
        for answer in ("n", "y"):  # No first: nothing is asked
            await pilot.press("x")
            await wait_until(pilot, lambda: app.screen is not screen, 10, "the question")
            await pilot.press(answer)
            await wait_until(pilot, lambda: app.screen is screen, 10, "the answer")
            if answer == "n":
                assert asked() == ["pause", "resume"]
        await wait_until(pilot, lambda: asked() == ["pause", "resume", "abort"], 10, "abort")
        await pilot.press("n")
        await wait_until(pilot, lambda: app.screen is not screen, 10, "the notes dialog")
        await pilot.press(*"tired", "enter")
        await wait_until(pilot, lambda: app.screen is screen, 10, "the dialog closed")

        def noted() -> str:
            with Store(db) as store:
                return store.get_episode(episode).note

        await wait_until(pilot, lambda: noted() == "tired", 10, "the note stored")
