"""State snapshots, their diff and the checks proposed from it, on real files.

The homes are real folders read through the real local guest channel (`find`,
`read_file`); the Kdenlive projects were saved by Kdenlive 22.12 (tests/data/kdenlive),
the images written by the asset generator (tasks/gimp/assets), and the Blender
scenes are made by the real Blender in the Blender tests. Every proposal is loaded as
a task by the real task loader.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.authoring.analysis import analyse_snapshot, missing_guest_facts
from app.authoring.diff import diff_states
from app.authoring.propose import (
    ProposedCheck,
    copy_assets,
    evaluate_tree,
    propose_checks,
    propose_recording,
)
from app.authoring.state import (
    StateSnapshot,
    blob_path,
    capture_state,
    load_snapshot,
    snapshot_labels,
)
from app.core.errors import TaskError
from app.desktops.local.guest import LocalGuest
from app.tasks.loader import load_task

ROOT = Path(__file__).resolve().parents[2]
KDENLIVE = ROOT / "tests" / "data" / "kdenlive"
GIMP_ASSETS = ROOT / "tasks" / "gimp" / "assets"


def local_guest(home: Path) -> LocalGuest:
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    env.update(HOME=str(home), TMPDIR=str(home))
    logs = home.parent / "logs"
    logs.mkdir(exist_ok=True)
    return LocalGuest(home, env, logs, sandbox=None)


class CountingGuest:
    """The real local guest, counting the files read through it."""

    def __init__(self, guest: LocalGuest) -> None:
        self.inner = guest
        self.reads: list[str] = []

    @property
    def home(self) -> str:
        return self.inner.home

    async def run(self, argv: list[str], timeout: float = 30.0) -> Any:
        return await self.inner.run(argv, timeout)

    async def launch(self, argv: list[str]) -> None:
        await self.inner.launch(argv)

    async def read_file(self, path: str, max_bytes: int = 64 * 1024 * 1024) -> bytes:
        self.reads.append(path)
        return await self.inner.read_file(path, max_bytes)

    async def write_file(self, path: str, data: bytes) -> None:
        await self.inner.write_file(path, data)

    async def exists(self, path: str) -> bool:
        return await self.inner.exists(path)


def put(home: Path, relative: str, source: Path | bytes) -> Path:
    target = home / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(source, Path):
        shutil.copyfile(source, target)
    else:
        target.write_bytes(source)
    return target


def checks_named(proposals: list[ProposedCheck], name: str) -> list[dict[str, Any]]:
    return [p.entry for p in proposals if p.check == name]


def load_as_task(tmp: Path, app: str, accepted: list[ProposedCheck]) -> Any:
    """A task whose evaluate tree is the proposals, written and loaded for real."""
    folder = tmp / "task"
    folder.mkdir(exist_ok=True)
    copy_assets(accepted, folder)
    task = {
        "id": "proposed",
        "app": app,
        "level": "L3",
        "title": "Proposed from a recording",
        "instruction": "Do it again.",
        "evaluate": evaluate_tree(accepted),
    }
    (folder / "proposed.yaml").write_text(yaml.safe_dump(task, sort_keys=False))
    return load_task(folder / "proposed.yaml")


async def snapshot(guest: Any, folder: Path, label: str, previous: StateSnapshot | None = None,
                   analyse_with: Any = None) -> StateSnapshot:  # fmt: skip
    taken = await capture_state(guest, folder, label, previous=previous)
    return await analyse_snapshot(folder, taken, analyse_with)


# --- capture ----------------------------------------------------------------------------


def test_capture_lists_the_home_keeps_copies_and_reads_only_what_changed(tmp_path: Path) -> None:
    home, rec = tmp_path / "home", tmp_path / "rec"
    guest = CountingGuest(local_guest(home))
    put(home, "Desktop/a.txt", b"first")
    put(home, "Desktop/deep/b.txt", b"second")
    put(home, ".config/app/rc", b"churn")  # hidden: app configuration
    put(home, "Desktop/.hidden/c.txt", b"nope")
    put(home, "odd name\nwith newline.txt", b"odd")

    async def scenario() -> tuple[StateSnapshot, StateSnapshot, list[str]]:
        start = await capture_state(guest, rec, "start")
        first_reads = list(guest.reads)
        guest.reads.clear()
        (home / "Desktop" / "a.txt").write_bytes(b"first, edited")
        end = await capture_state(guest, rec, "end", previous=start)
        assert first_reads  # the start read every file once
        return start, end, guest.reads

    start, end, second_reads = asyncio.run(scenario())
    assert sorted(start.files) == [
        "Desktop/a.txt",
        "Desktop/deep/b.txt",
        "odd name\nwith newline.txt",
    ]
    entry = start.files["Desktop/deep/b.txt"]
    assert entry.size == 6 and blob_path(rec, str(entry.sha256)).read_bytes() == b"second"
    # Only the edited file was read again; the others' hashes were reused.
    assert second_reads == ["~/Desktop/a.txt"]
    assert load_snapshot(rec, "end").files["Desktop/a.txt"].size == len(b"first, edited")
    assert snapshot_labels(rec) == ["start", "end"]
    diff = diff_states(start, end)
    assert [(f.path, f.status) for f in diff.files] == [("Desktop/a.txt", "changed")]


def test_a_file_over_the_cap_is_listed_but_not_copied(tmp_path: Path) -> None:
    home, rec = tmp_path / "home", tmp_path / "rec"
    put(home, "big.bin", b"x" * 2000)
    taken = asyncio.run(capture_state(local_guest(home), rec, "start", max_file_bytes=1000))
    big = taken.files["big.bin"]
    assert big.size == 2000 and big.sha256 is None and "not copied" in str(big.note)


# --- Kdenlive: projects saved by Kdenlive 22.12 ------------------------------------------


def test_a_timeline_edit_proposes_its_clips_effects_and_guides(tmp_path: Path) -> None:
    home, rec = tmp_path / "home", tmp_path / "rec"
    guest = local_guest(home)
    project = "Videos/edit.kdenlive"
    put(home, project, KDENLIVE / "inserted.kdenlive")

    async def scenario() -> tuple[StateSnapshot, StateSnapshot]:
        start = await snapshot(guest, rec, "start")
        put(home, project, KDENLIVE / "showcase.kdenlive")
        end = await snapshot(guest, rec, "end", start)
        return start, end

    start, end = asyncio.run(scenario())
    diff = diff_states(start, end)
    (changed,) = diff.files
    whats = {c.what for c in changed.changes}
    assert {"clips_changed", "effect_added", "guides_changed", "composition_added"} <= whats
    proposals = propose_checks(diff, rec)
    clips = checks_named(proposals, "kdenlive_clips")
    assert clips and all(c["path"] == "~/Videos/edit.kdenlive" for c in clips)
    facts = end.facts[project]
    v1 = next(t for t in facts["tracks"] if t["label"] == "V1")
    v1_check = next(c for c in clips if c["track"] == "V1")
    assert [s["position"] for s in v1_check["clips"]] == [c["position"] for c in v1["clips"]]
    assert v1_check["tolerance"] == 5  # a fifth of a second at 25 fps
    effects = checks_named(proposals, "kdenlive_effect")
    assert {"fade_from_black", "frei0r.brightness"} <= {e["effect"] for e in effects}
    guides = checks_named(proposals, "kdenlive_guides")
    assert guides and any(g.get("comment") == "Harbour" for g in guides[0]["guides"])
    assert checks_named(proposals, "file_modified_after_start")
    assert all(p.why for p in proposals)
    task = load_as_task(tmp_path, "kdenlive", proposals)
    assert len(task.evaluate.children) == len(proposals)


def test_a_project_first_saved_under_a_new_name_proposes_its_track_states(
    tmp_path: Path,
) -> None:
    # Save As after locking or muting a track: the new file has no earlier version,
    # so its tracks are compared with fresh ones. showcase.kdenlive, saved by Kdenlive,
    # has V2 named "Titles" and locked and A2 muted; V1 and A1 are as Kdenlive makes them.
    home, rec = tmp_path / "home", tmp_path / "rec"
    guest = local_guest(home)
    project = "Videos/edit.kdenlive"
    (home / "Videos").mkdir(parents=True)

    async def scenario() -> tuple[StateSnapshot, StateSnapshot]:
        start = await snapshot(guest, rec, "start")
        put(home, project, KDENLIVE / "showcase.kdenlive")
        end = await snapshot(guest, rec, "end", start)
        return start, end

    start, end = asyncio.run(scenario())
    proposals = propose_checks(diff_states(start, end), rec)
    states = {
        (c["track"], key, c[key])
        for c in checks_named(proposals, "kdenlive_track")
        for key in ("name", "hidden", "muted", "locked")
        if key in c
    }
    assert states == {("V2", "name", "Titles"), ("V2", "locked", True), ("A2", "muted", True)}
    # A new project's profile and bin are the author's choices too: proposed, so that a
    # project saved with another profile or without the clips imported does not pass.
    (profile,) = checks_named(proposals, "kdenlive_profile")
    assert (profile["width"], profile["height"], profile["fps"]) == (640, 360, 25.0)
    (bin_check,) = checks_named(proposals, "kdenlive_bin")
    assert bin_check["present"] == ["Opening title", "harbour.mp4", "market.mp4", "sunset.mp4"]
    task = load_as_task(tmp_path, "kdenlive", proposals)
    from app.episode.scoring import score_task

    assert asyncio.run(score_task(task, guest)).passed is True
    put(home, project, KDENLIVE / "grouped.kdenlive")  # one clip imported, not four
    verdict = asyncio.run(score_task(task, guest))
    failing = {c.name for c in verdict.checks if not c.passed}
    assert verdict.passed is False and "kdenlive_bin" in failing


def test_clips_imported_and_removed_propose_the_bin(tmp_path: Path) -> None:
    home, rec = tmp_path / "home", tmp_path / "rec"
    guest = local_guest(home)
    project = "Videos/edit.kdenlive"
    put(home, project, KDENLIVE / "grouped.kdenlive")  # harbour.mp4 in the bin

    async def scenario() -> tuple[StateSnapshot, StateSnapshot]:
        start = await snapshot(guest, rec, "start")
        put(home, project, KDENLIVE / "mix.kdenlive")  # market.mp4 and sunset.mp4 added
        end = await snapshot(guest, rec, "end", start)
        return start, end

    start, end = asyncio.run(scenario())
    proposals = propose_checks(diff_states(start, end), rec)
    assert checks_named(proposals, "kdenlive_bin") == [
        {"check": "kdenlive_bin", "path": "~/Videos/edit.kdenlive",
         "present": ["market.mp4", "sunset.mp4"]}
    ]  # fmt: skip
    assert checks_named(proposals, "kdenlive_profile") == []  # unchanged


# --- images and deleted files --------------------------------------------------------------


def test_an_exported_png_and_a_deleted_draft_propose_their_checks(tmp_path: Path) -> None:
    home, rec = tmp_path / "home", tmp_path / "rec"
    guest = local_guest(home)
    put(home, "Desktop/photo.png", GIMP_ASSETS / "photo.png")
    put(home, "Desktop/draft.png", GIMP_ASSETS / "card.png")

    async def scenario() -> tuple[StateSnapshot, StateSnapshot]:
        start = await snapshot(guest, rec, "start")
        put(home, "Desktop/out.png", GIMP_ASSETS / "coffee.png")  # "exported"
        (home / "Desktop" / "draft.png").unlink()
        end = await snapshot(guest, rec, "end", start)
        return start, end

    start, end = asyncio.run(scenario())
    diff = diff_states(start, end)
    assert [(f.path, f.status) for f in diff.files] == [
        ("Desktop/draft.png", "deleted"),
        ("Desktop/out.png", "created"),
    ]
    proposals = propose_checks(diff, rec)
    assert checks_named(proposals, "file_not_exists") == [
        {"check": "file_not_exists", "path": "~/Desktop/draft.png"}
    ]
    assert checks_named(proposals, "file_exists")[0]["path"] == "~/Desktop/out.png"
    facts = end.facts["Desktop/out.png"]
    (size,) = checks_named(proposals, "image_size")
    assert (size["width"], size["height"]) == (facts["width"], facts["height"])
    similar = next(p for p in proposals if p.check == "image_similarity")
    assert similar.entry["reference"] == "assets/expected/Desktop/out.png"
    assert 0.9 < similar.entry["threshold"] < 1.0
    (source,) = similar.assets.values()
    assert source.read_bytes() == (GIMP_ASSETS / "coffee.png").read_bytes()
    task = load_as_task(tmp_path, "gimp", proposals)
    assert (task.folder / "assets" / "expected" / "Desktop" / "out.png").is_file()


def test_a_wrong_picture_of_the_right_kind_scores_little(tmp_path: Path) -> None:
    """The deciding check decides: a wrong result that passes the file, size, mode and
    colour checks (the produced picture flipped) gets at most the gates' share of the
    credit, not 0.9; the produced picture itself gets 1."""
    from PIL import Image

    from app.authoring.proposed import GATE_SHARE
    from app.episode.scoring import score_task

    home, rec = tmp_path / "home", tmp_path / "rec"
    guest = local_guest(home)
    (home / "Desktop").mkdir(parents=True)

    async def scenario() -> tuple[StateSnapshot, StateSnapshot]:
        start = await snapshot(guest, rec, "start")
        # Brighter, so that colour measures are proposed beside the similarity.
        with Image.open(GIMP_ASSETS / "coffee.png") as image:
            image.convert("RGB").point(lambda v: min(255, v + 40)).save(
                home / "Desktop" / "out.png"
            )
        end = await snapshot(guest, rec, "end", start)
        return start, end

    start, end = asyncio.run(scenario())
    proposals = propose_checks(diff_states(start, end), rec)
    names = {p.check for p in proposals}
    assert {"file_exists", "image_size", "image_mode", "image_similarity"} <= names
    task = load_as_task(tmp_path, "gimp", proposals)
    right = asyncio.run(score_task(task, guest))
    assert right.passed is True and right.score == pytest.approx(1.0)

    out = home / "Desktop" / "out.png"
    with Image.open(out) as image:
        image.transpose(Image.Transpose.FLIP_TOP_BOTTOM).save(out)
    wrong = asyncio.run(score_task(task, guest))
    passed = {c.name for c in wrong.checks if c.passed}
    assert "image_similarity" not in passed and "image_size" in passed
    assert wrong.passed is False and wrong.score <= GATE_SHARE + 1e-9, wrong.score


def test_a_jpeg_export_is_compared_through_its_encoder(tmp_path: Path) -> None:
    """A JPEG output's similarity threshold is what the produced picture keeps when saved
    again at the lowest quality accepted: the same work exported at 85 or 75 passes
    (the fixed 0.97 failed them), a wrong picture does not; a PNG keeps 0.97."""
    from PIL import Image, ImageOps

    from app.episode.scoring import score_task

    home, rec = tmp_path / "home", tmp_path / "rec"
    guest = local_guest(home)
    (home / "Desktop").mkdir(parents=True)
    with Image.open(GIMP_ASSETS / "coffee.png") as image:
        source = image.convert("RGB")
    work = ImageOps.mirror(source)  # the task: flip it horizontally
    out = home / "Desktop" / "c.jpg"

    async def scenario() -> tuple[StateSnapshot, StateSnapshot]:
        start = await snapshot(guest, rec, "start")
        work.save(out, "JPEG", quality=90)  # GIMP's default export
        work.save(home / "Desktop" / "c.png")  # its lossless twin
        end = await snapshot(guest, rec, "end", start)
        return start, end

    start, end = asyncio.run(scenario())
    proposals = propose_checks(diff_states(start, end), rec)
    similar = {p.path: p for p in proposals if p.check == "image_similarity"}
    jpeg, png = similar["~/Desktop/c.jpg"], similar["~/Desktop/c.png"]
    assert png.entry["threshold"] == 0.97
    assert 0.8 < jpeg.entry["threshold"] < 0.97
    assert "quality 70 keeps" in jpeg.why
    task = load_as_task(tmp_path, "gimp", [jpeg])
    verdicts = {}
    for name, picture, quality in (
        ("q85", work, 85),
        ("q75", work, 75),
        ("vertical flip", ImageOps.flip(source), 90),
        ("untouched", source, 90),
        ("rotated", source.rotate(180), 90),
    ):
        picture.save(out, "JPEG", quality=quality)
        verdicts[name] = asyncio.run(score_task(task, guest)).passed
    assert verdicts == {
        "q85": True,
        "q75": True,
        "vertical flip": False,
        "untouched": False,
        "rotated": False,
    }


def test_an_edited_image_proposes_its_new_size_and_colours(tmp_path: Path) -> None:
    from PIL import Image, ImageEnhance

    home, rec = tmp_path / "home", tmp_path / "rec"
    guest = local_guest(home)
    put(home, "Pictures/p.png", GIMP_ASSETS / "photo.png")

    async def scenario() -> tuple[StateSnapshot, StateSnapshot]:
        start = await snapshot(guest, rec, "start")
        with Image.open(home / "Pictures" / "p.png") as image:
            small = image.convert("RGB").resize((image.width // 2, image.height // 2))
            ImageEnhance.Brightness(small).enhance(1.6).save(home / "Pictures" / "p.png")
        end = await snapshot(guest, rec, "end", start)
        return start, end

    start, end = asyncio.run(scenario())
    diff = diff_states(start, end)
    whats = {c.what for c in diff.files[0].changes}
    assert {"image_resized", "image_colors"} <= whats
    proposals = propose_checks(diff, rec)
    (stats,) = checks_named(proposals, "image_color_stats")
    low, high = stats["brightness"]
    produced = end.facts["Pictures/p.png"]["measures"]["brightness"]
    before = start.facts["Pictures/p.png"]["measures"]["brightness"]
    assert low <= produced <= high and not low <= before <= high
    load_as_task(tmp_path, "gimp", proposals)


# --- phases from boundaries ------------------------------------------------------------


def test_each_boundary_proposes_the_checks_of_its_own_phase(tmp_path: Path) -> None:
    home, rec = tmp_path / "home", tmp_path / "rec"
    guest = local_guest(home)

    async def scenario() -> None:
        start = await snapshot(guest, rec, "start")
        put(home, "Desktop/one.png", GIMP_ASSETS / "badge.png")
        first = await snapshot(guest, rec, "boundary-1", start)
        put(home, "Desktop/two.png", GIMP_ASSETS / "sign.png")
        await snapshot(guest, rec, "end", first)

    asyncio.run(scenario())
    proposals = propose_recording(rec)
    assert [d.after for d in proposals.diffs] == ["end", "boundary-1", "end"]
    phase_one, phase_two = proposals.phases
    assert {p.path for p in phase_one} == {"~/Desktop/one.png"}
    assert {p.path for p in phase_two} == {"~/Desktop/two.png"}
    similar = next(p for p in phase_one if p.check == "image_similarity")
    assert similar.entry["reference"] == "assets/expected/boundary-1/Desktop/one.png"
    assert {p.path for p in proposals.final} == {"~/Desktop/one.png", "~/Desktop/two.png"}


def test_a_recording_cut_off_proposes_from_its_last_boundary(tmp_path: Path) -> None:
    """The recorder died after the second boundary (no end snapshot): what was done up
    to it is proposed, the last boundary standing for the end, and the cut is said."""
    home, rec = tmp_path / "home", tmp_path / "rec"
    guest = local_guest(home)

    async def scenario() -> None:
        start = await snapshot(guest, rec, "start")
        put(home, "Desktop/one.png", GIMP_ASSETS / "badge.png")
        first = await snapshot(guest, rec, "boundary-1", start)
        put(home, "Desktop/two.png", GIMP_ASSETS / "sign.png")
        await snapshot(guest, rec, "boundary-2", first)
        put(home, "Desktop/three.png", GIMP_ASSETS / "card.png")  # lost with the crash

    asyncio.run(scenario())
    assert "end" not in snapshot_labels(rec)
    proposals = propose_recording(rec)
    assert proposals.cut_at == "boundary-2"
    assert [d.after for d in proposals.diffs] == ["boundary-2", "boundary-1", "boundary-2"]
    assert {p.path for p in proposals.final} == {"~/Desktop/one.png", "~/Desktop/two.png"}
    assert [{p.path for p in phase} for phase in proposals.phases] == [
        {"~/Desktop/one.png"},
        {"~/Desktop/two.png"},
    ]
    load_as_task(tmp_path, "gimp", proposals.final)


def test_an_edit_is_validated_again(tmp_path: Path) -> None:
    home, rec = tmp_path / "home", tmp_path / "rec"
    guest = local_guest(home)

    async def scenario() -> list[ProposedCheck]:
        start = await snapshot(guest, rec, "start")
        put(home, "Desktop/one.png", GIMP_ASSETS / "badge.png")
        return propose_checks(diff_states(start, await snapshot(guest, rec, "end", start)), rec)

    size = next(p for p in asyncio.run(scenario()) if p.check == "image_size")
    assert size.edited(tolerance=3).entry["tolerance"] == 3
    with pytest.raises(TaskError, match="tolerance"):
        size.edited(tolerance=-1)


def test_diff_and_proposals_on_analysed_snapshots_are_fast(tmp_path: Path) -> None:
    """The pure part (no app dumps) of a recording's review: 300 files, one project."""
    home, rec = tmp_path / "home", tmp_path / "rec"
    guest = local_guest(home)
    for i in range(300):
        put(home, f"Documents/notes-{i}.txt", f"note {i}".encode())
    put(home, "Videos/edit.kdenlive", KDENLIVE / "inserted.kdenlive")

    async def scenario() -> tuple[StateSnapshot, StateSnapshot]:
        start = await snapshot(guest, rec, "start")
        for i in range(0, 300, 2):
            put(home, f"Documents/notes-{i}.txt", f"note {i}, edited".encode())
        put(home, "Videos/edit.kdenlive", KDENLIVE / "showcase.kdenlive")
        return start, await snapshot(guest, rec, "end", start)

    start, end = asyncio.run(scenario())
    began = time.perf_counter()
    proposals = propose_checks(diff_states(start, end), rec)
    elapsed = time.perf_counter() - began
    assert len(checks_named(proposals, "file_modified_after_start")) == 151
    # Linear, not quadratic, in the files changed: a quadratic pass over 300 files takes
    # minutes. The bound is far above the linear time (tens of milliseconds idle) so a
    # loaded machine does not fail it.
    assert elapsed < 15.0, f"diff and proposals took {elapsed:.2f} s"


def test_blend_files_wait_for_a_guest_with_blender(tmp_path: Path) -> None:
    home, rec = tmp_path / "home", tmp_path / "rec"
    put(home, "Desktop/scene.blend", ROOT / "tasks" / "blender" / "assets" / "cube.blend")
    taken = asyncio.run(snapshot(local_guest(home), rec, "start"))
    assert missing_guest_facts(taken) == ["Desktop/scene.blend"]
