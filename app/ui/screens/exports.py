"""Export from the Episodes screen (`x`): the episodes the filter shows as JSONL or a
Hugging Face dataset, or the highlighted one as an MP4 — `deskloop episodes export`'s
writers (app.metrics.export), run in a worker thread (an MP4 or a dataset takes
seconds). Files go to `exports/` beside the database, named by time, so an export
never replaces an earlier one; the notification names the path.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from textual import work

from app.metrics.export import write_dataset, write_episodes_jsonl, write_mp4
from app.store import EpisodeRecord
from app.ui.modals import ChoiceScreen
from app.ui.screens.base import LabScreen


def export_folder(db: Path) -> Path:
    return db.resolve().parent / "exports"


def export_from(
    screen: LabScreen, shown: list[EpisodeRecord], highlighted: EpisodeRecord | None
) -> None:
    """Ask what to export, then write it off the UI's loop."""
    ended = [e for e in shown if e.status != "running"]
    if not ended:
        screen.notify("No ended episode shown to export.", severity="warning")
        return
    choices = [
        ("jsonl", f"JSONL: the {len(ended)} ended episode(s) shown"),
        ("dataset", f"Hugging Face dataset: the {len(ended)} ended episode(s) shown"),
    ]
    if highlighted is not None:
        choices.append(("mp4", f"MP4: the screens of episode {highlighted.id}"))

    def chosen(kind: str | None) -> None:
        if kind is not None:
            _export(screen, kind, ended, highlighted)

    screen.app.push_screen(
        ChoiceScreen("Export", f"Written under {export_folder(screen.lab.db_path)}", choices),
        chosen,
    )


@work(thread=True, group="export", exit_on_error=False, description="exporting")
def _export(
    screen: LabScreen, kind: str, episodes: list[EpisodeRecord], one: EpisodeRecord | None
) -> None:
    store = screen.lab.store
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    folder = export_folder(screen.lab.db_path)
    if kind == "mp4":
        assert one is not None
        path = folder / f"episode-{one.id}-{stamp}.mp4"
        count = write_mp4(store, one.id, path)
        said = f"{count} frames of episode {one.id}"
    elif kind == "dataset":
        path = folder / f"dataset-{stamp}"
        said = f"{write_dataset(store, episodes, path)} episode(s) as a dataset"
    else:
        path = folder / f"episodes-{stamp}.jsonl"
        said = f"{write_episodes_jsonl(store, episodes, path)} episode(s)"
    screen.app.call_from_thread(screen.notify, f"Exported {said} to {path}", timeout=15)
