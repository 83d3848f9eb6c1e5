"""Episodes out of the store for a researcher's own tools: JSON lines, a Hugging Face
`datasets` dataset, and one episode's frames as an MP4 video.

The JSONL and the dataset hold the same rows, `app.metrics.report.episode_json`'s
(the keys and types `deskloop report --jsonl` writes), for the episodes chosen by id or
by tag — not only those the figures count, so a researcher can cut by their own tags.
The video is the screens the agent saw before each step, then the final state, at a
fixed rate, encoded by ffmpeg (Debian's `ffmpeg`; run as a subprocess, bounded).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path

from app.core.errors import DeskLoopError
from app.metrics.report import atomic_write, episode_json
from app.store import EpisodeRecord, Store, normalize_tag

FFMPEG_SECONDS = 600.0
"""The longest an encoding may take (a long episode at a few hundred frames takes
seconds); beyond it ffmpeg is stopped and the export fails."""


class ExportError(DeskLoopError):
    """An export could not be written: no episode to export, no frames, no ffmpeg or
    `datasets`, or a write that failed."""

    title = "Export error"


def choose_episodes(
    store: Store, ids: Iterable[int] = (), tag: str | None = None
) -> list[EpisodeRecord]:
    """The episodes named by id (in that order), or else every ended one, oldest first;
    only those with `tag` when one is given. Running episodes are never exported.

    Raises:
        StoreError: an id that is not in the store, or a malformed tag.
        ExportError: nothing is left to export.
    """
    wanted = list(ids)
    if wanted:
        records = [store.get_episode(i) for i in wanted]
    else:
        records = list(reversed(store.list_episodes(limit=None)))
    records = [r for r in records if r.status != "running"]
    if tag is not None:
        name = normalize_tag(tag)
        records = [r for r in records if name in r.tags]
    if not records:
        what = f"episode with tag {tag!r}" if tag else "ended episode"
        raise ExportError(f"{store.path}: no {what} to export")
    return records


def write_episodes_jsonl(store: Store, records: list[EpisodeRecord], path: Path) -> int:
    """One `episode_json` row per line to `path` (replaced whole); returns how many."""
    lines = [json.dumps(episode_json(store, r), ensure_ascii=False) for r in records]
    try:
        atomic_write(path, "".join(line + "\n" for line in lines))
    except OSError as exc:
        raise ExportError(f"{path}: cannot write the JSONL: {exc}") from exc
    return len(lines)


def write_dataset(store: Store, records: list[EpisodeRecord], folder: Path) -> int:
    """The rows as a `datasets.Dataset` saved to `folder` (`datasets.load_from_disk`
    reads it back); returns how many.

    Raises:
        ExportError: the `datasets` package is not installed, or the save failed.
    """
    try:
        # Imported here: it takes seconds, and only this export needs it.
        import datasets
    except ImportError as exc:
        raise ExportError(
            "a Hugging Face dataset needs the `datasets` package: pip install datasets"
        ) from exc
    rows = [episode_json(store, r) for r in records]
    try:
        datasets.Dataset.from_list(rows).save_to_disk(str(folder))
    except (OSError, ValueError) as exc:
        raise ExportError(f"{folder}: cannot save the dataset: {exc}") from exc
    return len(rows)


def episode_frames(store: Store, episode_id: int) -> list[Path]:
    """The screens of the episode in order: before each step, then the final state."""
    names = [s.frame for s in store.steps(episode_id)]
    names.append(store.get_episode(episode_id).final_frame)
    return [store.frame_path(n) for n in names if n is not None]


def write_mp4(store: Store, episode_id: int, path: Path, fps: float = 2.0) -> int:
    """The episode's screens as an H.264 MP4 at `fps` frames a second; returns how many
    frames it holds.

    Raises:
        ExportError: no frames recorded, no ffmpeg, or ffmpeg failed (its message).
    """
    if fps <= 0:
        raise ExportError(f"fps {fps}: frames a second must be above 0")
    frames = episode_frames(store, episode_id)
    if not frames:
        raise ExportError(f"episode {episode_id} in {store.path} has no recorded frames")
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        raise ExportError("an MP4 export needs ffmpeg on PATH (apt install ffmpeg)")
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="deskloop-mp4-") as tmp:
        # A numbered sequence for ffmpeg's image2 reader; links, not copies (frames are
        # shared between steps whose screen did not change).
        for i, frame in enumerate(frames):
            link = Path(tmp) / f"{i:06d}.png"
            try:
                link.symlink_to(frame.resolve())
            except OSError:
                shutil.copyfile(frame, link)
        argv = [
            ffmpeg, "-y", "-loglevel", "error", "-framerate", f"{fps:g}",
            "-i", str(Path(tmp) / "%06d.png"),
            # H.264 in yuv420p (what every player reads) needs even sides.
            "-vf", "scale=trunc(iw/2)*2:trunc(ih/2)*2,format=yuv420p",
            "-c:v", "libx264", "-movflags", "+faststart", str(path),
        ]  # fmt: skip
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=FFMPEG_SECONDS, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise ExportError(f"{path}: ffmpeg took over {FFMPEG_SECONDS:.0f} s") from exc
    if done.returncode != 0:
        raise ExportError(f"{path}: ffmpeg failed ({done.returncode}): {done.stderr.strip()}")
    return len(frames)
