"""The task cache (app/tasks/cache.py): a hit is the task the file loads as; anything
that could change what a file loads as (its bytes, its path, the loading code) misses;
a damaged entry is rebuilt; errors are never cached and read as without the cache.

Every test points $DESKLOOP_CACHE at its own folder, as the CLI reads it.
"""

from __future__ import annotations

import os
import pickle
import re
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from app.checks.registry import get_check
from app.checks.tree import leaves
from app.core.errors import TaskError
from app.tasks import cache, loader
from app.tasks.cache import TaskCache, cache_root, code_digest, default_cache
from app.tasks.loader import load_task, load_tasks
from app.tasks.model import Task
from app.vmimages.cache import cache_dir

ROOT = Path(__file__).resolve().parents[2]
TASK = """\
id: cached-task
app: gimp
level: L1
title: Flip the photo
instruction: Flip it.
setup:
  - upload: {src: assets/a.png, dest: ~/Desktop/a.png}
  - launch: [gimp, ~/Desktop/a.png]
phases:
  - message: Now make it smaller.
    trigger: {all: [agent_done, {step_count: 2}]}
evaluate:
  all:
    - {check: file_exists, path: ~/Desktop/out.png}
    - {check: image_similarity, path: ~/Desktop/out.png, reference: assets/a.png}
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The task cache's folder: $DESKLOOP_CACHE/tasks under this test's own folder."""
    monkeypatch.setenv("DESKLOOP_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("DESKLOOP_TASK_CACHE", raising=False)
    return tmp_path / "cache" / "tasks"


def write_task(tmp_path: Path, text: str = TASK) -> Path:
    task_dir = tmp_path / "gimp"
    (task_dir / "assets").mkdir(parents=True, exist_ok=True)
    (task_dir / "assets" / "a.png").write_bytes(b"png")
    path = task_dir / "cached-task.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.pickle")) if folder.is_dir() else []


def no_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the loader's YAML parsing fail: a load that succeeds came from the cache."""

    def refuse(*args: object) -> None:
        raise AssertionError("parsed although the cache holds the task")

    monkeypatch.setattr(loader, "parse_yaml_lines", refuse)


def test_a_hit_is_equal_to_the_loaded_task(
    tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_task(tmp_path)
    first = load_task(path)
    assert len(entries(folder)) == 1
    uncached = load_task(path, cache=False)
    no_parsing(monkeypatch)
    hit = load_task(path)
    assert hit == first == uncached
    assert hit.field_lines == first.field_lines and hit.field_lines["evaluate"] == 12
    assert (hit.source, hit.folder, hit.sha256) == (first.source, first.folder, first.sha256)
    # Checks are pickled by name: a hit's leaves hold the registered specs themselves.
    for leaf in leaves(hit.eval_tree):
        assert leaf.spec is get_check(leaf.spec.name)


def test_the_shipped_library_loads_the_same_from_the_cache(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed, errors = load_tasks(ROOT / "tasks")
    assert errors == [] and len(entries(folder)) == len(parsed)
    no_parsing(monkeypatch)
    cached, errors = load_tasks(ROOT / "tasks")
    assert errors == [] and cached == parsed


def test_editing_the_task_file_misses(
    tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_task(tmp_path)
    load_task(path)
    path.write_text(path.read_text().replace("Flip the photo", "Flip the picture"))
    assert load_task(path).title == "Flip the picture"
    assert len(entries(folder)) == 2
    # The same bytes under another name (or from another working folder) miss too: the
    # task's source, folder and id come from its path.
    other = tmp_path / "copy" / "gimp"
    shutil.copytree(path.parent, other)
    monkeypatch.chdir(tmp_path)
    assert load_task(Path("copy/gimp/cached-task.yaml")).source == Path(
        "copy/gimp/cached-task.yaml"
    )
    assert len(entries(folder)) == 3


def test_changed_loading_code_misses(
    tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_task(tmp_path)
    load_task(path)
    monkeypatch.setattr(cache, "code_key", lambda: "edited loader")
    load_task(path)
    assert len(entries(folder)) == 2


def test_the_code_key_covers_the_packages_that_decide_a_load(tmp_path: Path) -> None:
    app_dir = tmp_path / "app"
    shutil.copytree(ROOT / "app", app_dir, ignore=shutil.ignore_patterns("__pycache__"))
    before = code_digest(app_dir)
    assert code_digest(app_dir) == before
    for package in ("tasks", "checks", "core"):
        edited = next((app_dir / package).glob("*.py"))
        original = edited.read_bytes()
        edited.write_bytes(original + b"\n# edited\n")
        assert code_digest(app_dir) != before, package
        edited.write_bytes(original)
    (app_dir / "checks" / "new_checks.py").write_text("X = 1\n")
    assert code_digest(app_dir) != before
    (app_dir / "checks" / "new_checks.py").unlink()
    # Code a task's loading never runs does not invalidate the cache.
    (app_dir / "ui" / "app.py").write_text("# edited\n")
    assert code_digest(app_dir) == before


def test_loading_a_task_imports_no_app_code_outside_the_code_key() -> None:
    # What the key hashes must be all the app code a load runs (the import contracts
    # keep app.tasks above app.checks and app.core only); checked on a fresh process.
    code = "import sys, app.tasks.loader; print(*(m for m in sys.modules if m[:4] == 'app.'))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    modules = out.stdout.split()
    assert "app.tasks.model" in modules
    outside = [m for m in modules if m != "app" and m.split(".")[1] not in cache.CODE_PACKAGES]
    assert outside == []


def test_assets_are_looked_up_on_every_load(
    tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Assets are not part of the key: validation only looks them up, and the loader
    # does that again on a hit, so a removed asset reads as it does without the cache.
    path = write_task(tmp_path)
    load_task(path)
    asset = path.parent / "assets" / "a.png"
    asset.unlink()
    with pytest.raises(TaskError) as uncached:
        load_task(path, cache=False)
    no_parsing(monkeypatch)
    with pytest.raises(TaskError) as cached:
        load_task(path)
    assert str(cached.value) == str(uncached.value)
    assert f"{path}:7: setup[0].upload.src" in str(cached.value)
    assert "evaluate.all[1].reference" in str(cached.value)
    asset.write_bytes(b"other bytes")  # back, with other contents: still the same task
    assert load_task(path).title == "Flip the photo"
    assert len(entries(folder)) == 1


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: b"",
        lambda data: data[: len(data) // 2],
        lambda data: b"not a pickle at all",
        lambda data: pickle.dumps(("another key", None)),
        lambda data: pickle.dumps(["a list"]),
    ],
    ids=["empty", "truncated", "garbage", "another-key", "another-shape"],
)
def test_a_damaged_entry_is_ignored_and_rewritten(
    tmp_path: Path, folder: Path, damage: Callable[[bytes], bytes]
) -> None:
    path = write_task(tmp_path)
    expected = load_task(path)
    [entry] = entries(folder)
    good = entry.read_bytes()
    entry.write_bytes(damage(good))
    assert load_task(path) == expected
    assert entry.read_bytes() == good


def test_an_entry_is_read_only_from_a_folder_no_one_else_may_write(
    tmp_path: Path, folder: Path
) -> None:
    path = write_task(tmp_path)
    load_task(path)
    [entry] = entries(folder)
    assert folder.stat().st_mode & 0o777 == 0o700
    # An entry that names this file but holds another task shows whether it was read.
    planted = load_task(path).model_copy(update={"title": "planted"})
    key = TaskCache(folder).key(path, path.read_bytes())
    entry.write_bytes(pickle.dumps((key, planted)))
    assert load_task(path).title == "planted"
    folder.chmod(0o777)
    assert load_task(path).title == "Flip the photo"
    assert entry.read_bytes() == pickle.dumps((key, planted))  # nor written there


def test_off_bypasses_the_cache(
    tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_task(tmp_path)
    load_task(path)
    [entry] = entries(folder)
    key = TaskCache(folder).key(path, path.read_bytes())
    planted = load_task(path).model_copy(update={"title": "planted"})
    entry.write_bytes(pickle.dumps((key, planted)))
    for value in ("off", "OFF", "0", "no", "false"):
        monkeypatch.setenv("DESKLOOP_TASK_CACHE", value)
        assert default_cache() is None
        assert load_task(path).title == "Flip the photo"
    path.write_text(path.read_text().replace("Flip the photo", "Flip"))
    load_task(path)
    assert entries(folder) == [entry]  # nothing written either
    assert load_task(path, cache=False).title == "Flip"
    monkeypatch.setenv("DESKLOOP_TASK_CACHE", "on")
    assert default_cache() is not None


def test_errors_are_never_cached_and_read_as_without_the_cache(
    tmp_path: Path, folder: Path
) -> None:
    cases = {
        "yaml": (TASK + "  - [unclosed\n", r": YAML syntax error \(line 16, column 3\)"),
        "field": (TASK.replace("level: L1", "level: L9"), r":3: level: "),
        "check": (TASK.replace("check: file_exists", "check: file_exist"), r":14: evaluate"),
        "id": (TASK.replace("id: cached-task", "id: other"), r":1: id: 'other' must equal"),
    }
    for name, (text, pattern) in cases.items():
        path = write_task(tmp_path, text)
        messages = []
        for use_cache in (True, True, False):
            with pytest.raises(TaskError) as info:
                load_task(path, cache=use_cache)
            messages.append(str(info.value))
        assert messages[0] == messages[1] == messages[2], name
        assert re.search(f"^{re.escape(str(path))}{pattern}", messages[0], re.M), messages[0]
        assert entries(folder) == [], name


def test_the_cache_lives_in_the_projects_cache_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One folder for everything DeskLoop caches (VM images too), however it is set.
    monkeypatch.delenv("DESKLOOP_TASK_CACHE", raising=False)
    settings: list[dict[str, str | None]] = [
        {"DESKLOOP_CACHE": str(tmp_path / "a"), "XDG_CACHE_HOME": str(tmp_path / "x")},
        {"DESKLOOP_CACHE": None, "XDG_CACHE_HOME": str(tmp_path / "x")},
        {"DESKLOOP_CACHE": None, "XDG_CACHE_HOME": None},
    ]
    for env in settings:
        for name, value in env.items():
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, value)
        assert cache_root() == cache_dir()
        store = default_cache()
        assert store is not None and store.folder == cache_dir() / "tasks"


def test_the_folder_is_safe_to_delete(tmp_path: Path, folder: Path) -> None:
    path = write_task(tmp_path)
    expected = load_task(path)
    shutil.rmtree(folder.parent)
    assert load_task(path) == expected
    assert len(entries(folder)) == 1


def test_a_cache_that_cannot_be_written_only_loads_slower(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would be")
    monkeypatch.setenv("DESKLOOP_CACHE", str(blocker))
    path = write_task(tmp_path)
    assert load_task(path) == load_task(path, cache=False)


def test_a_failed_write_leaves_no_temporary_file(
    tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    path = write_task(tmp_path)
    load_task(path)
    assert list(folder.iterdir()) == []


WRITER = """\
import sys
from pathlib import Path
from app.tasks.cache import TaskCache
from app.tasks.loader import load_task

path = Path(sys.argv[1])
task = load_task(path, cache=False)
store = TaskCache(Path(sys.argv[2]))
data = path.read_bytes()
print("ready", flush=True)
for _ in range(int(sys.argv[3])):
    store.put(path, data, task)
"""


def test_concurrent_writers_never_leave_a_partial_entry(tmp_path: Path, folder: Path) -> None:
    # A large entry (a long instruction), so that writing it in place would be seen
    # half-done; entries are written to a temporary file and renamed.
    path = write_task(tmp_path, TASK.replace("Flip it.", "Flip it. " * 20_000))
    expected = load_task(path, cache=False)
    key = TaskCache(folder).key(path, path.read_bytes())
    entry = TaskCache(folder).path(key)
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(folder), "30"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    try:
        for writer in writers:
            assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
        reads = 0
        while any(writer.poll() is None for writer in writers):
            try:
                data = entry.read_bytes()
            except FileNotFoundError:
                time.sleep(0.001)
                continue
            stored_key, task = pickle.loads(data)  # never a partial pickle
            assert stored_key == key and task == expected
            reads += 1
        assert reads > 0
    finally:
        for writer in writers:
            writer.kill()
            writer.wait()
    assert [writer.returncode for writer in writers] == [0, 0, 0]
    assert list(folder.iterdir()) == [entry]
    assert isinstance(TaskCache(folder).get(path, path.read_bytes()), Task)
