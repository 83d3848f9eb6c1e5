"""`deskloop episodes export`: JSONL, a Hugging Face dataset and an MP4 (real ffmpeg),
from a store with real PNG frames (tests/ui/helpers' fixture database)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from app.cli import main
from app.metrics.export import episode_frames
from app.store import Store
from tests.ui.helpers import fixture_db


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return fixture_db(tmp_path / "db" / "deskloop.db")


def test_jsonl_and_dataset_hold_the_chosen_episodes(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import datasets

    with Store(db) as store:
        episodes = store.list_episodes(limit=None)
        tagged = [e.id for e in episodes[:2]]
        for eid in tagged:
            store.annotate_episode(eid, add_tags=["wave-1"], note=f"seen {eid}")
    out = tmp_path / "out"
    code = main(["--db", str(db), "episodes", "export", "--tag", "wave-1",
                 "--jsonl", str(out / "e.jsonl"), "--dataset", str(out / "ds")])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    lines = [json.loads(line) for line in (out / "e.jsonl").read_text().splitlines()]
    assert sorted(r["episode_id"] for r in lines) == sorted(tagged)
    assert all(r["tags"] == ["wave-1"] and r["note"] == f"seen {r['episode_id']}" for r in lines)
    ds = datasets.load_from_disk(str(out / "ds"))
    assert sorted(ds["episode_id"]) == sorted(tagged)
    assert ds.num_rows == 2 and ds[0]["messages"] and ds[0]["actions"]
    assert ds.to_list() == lines  # the same rows, in the same order

    # By id, every kind of episode; nothing to export is an error that names the db.
    assert main(["--db", str(db), "episodes", "export", str(episodes[-1].id),
                 "--jsonl", str(out / "one.jsonl")]) == 0  # fmt: skip
    assert len((out / "one.jsonl").read_text().splitlines()) == 1
    capsys.readouterr()
    assert main(["--db", str(db), "episodes", "export", "--tag", "none",
                 "--jsonl", str(out / "x.jsonl")]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "no episode with tag 'none' to export" in err and str(db) in err
    assert main(["--db", str(db), "episodes", "export"]) == 2
    assert "--jsonl PATH, --dataset DIR or --mp4 PATH" in capsys.readouterr().err


def test_an_episode_exports_to_an_mp4_of_its_screens(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Store(db) as store:
        eid = next(e.id for e in store.list_episodes(limit=None) if episode_frames(store, e.id))
        frames = episode_frames(store, eid)
    video = tmp_path / "v" / "episode.mp4"
    assert main(["--db", str(db), "episodes", "export", str(eid), "--mp4", str(video),
                 "--fps", "4"]) == 0  # fmt: skip
    assert f"wrote {len(frames)} frame(s) of episode {eid}" in capsys.readouterr().out
    probe = subprocess.run(
        ["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
         "stream=codec_name,width,height,nb_read_frames", "-of", "json", str(video)],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    stream = json.loads(probe.stdout)["streams"][0]
    assert stream["codec_name"] == "h264"
    assert (stream["width"], stream["height"]) == (160, 100)
    assert int(stream["nb_read_frames"]) == len(frames)
    # The first frame decodes to the first screen (white box on its colour, up to the
    # encoder's loss).
    raw = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", str(video), "-frames:v", "1", "-f", "rawvideo",
         "-pix_fmt", "rgb24", "-"],
        capture_output=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    from PIL import Image

    decoded = np.frombuffer(raw, np.uint8).reshape(100, 160, 3).astype(int)
    with Image.open(frames[0]) as image:
        first = np.asarray(image.convert("RGB")).astype(int)
    assert np.abs(decoded - first).mean() < 8

    assert main(["--db", str(db), "episodes", "export", "--mp4", str(video)]) == 2
    assert "exactly one id" in capsys.readouterr().err
