"""The suite's own plugin (tests/suite_plugin.py) and its timing tables
(tests/suite_times.py, bench/bench_suite.py): what is recorded, how it adds up, and how
a run is spread over xdist workers, checked on a small suite run by real pytest-xdist."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.suite_plugin import _scope_of, pytest_collection_modifyitems, record_time
from tests.suite_times import module_times, read_times, report_lines, summary_lines

ROOT = Path(__file__).resolve().parent.parent


def _test(nodeid: str, when: str, seconds: float, worker: str = "gw0") -> dict[str, Any]:
    return {"kind": "test", "t": 0.0, "id": nodeid, "when": when, "s": seconds, "worker": worker}


def test_module_times_add_the_phases_and_count_each_test_once() -> None:
    records = [
        _test("tests/a.py::one", "setup", 10.0),
        _test("tests/a.py::one", "call", 2.0),
        _test("tests/a.py::one", "teardown", 1.0),
        _test("tests/a.py::two", "setup", 0.5, "gw1"),
        _test("tests/a.py::two", "call", 0.5, "gw1"),
        _test("tests/b.py::one", "call", 30.0),
    ]
    a, b = sorted(module_times(records), key=lambda m: m.module)
    assert (a.tests, a.setup, a.call, a.teardown, a.total) == (2, 10.5, 2.5, 1.0, 14.0)
    assert (b.tests, b.call) == (0, 30.0)  # no setup record: counted by its setup only
    assert a.workers == {"gw0", "gw1"}
    assert [m.module for m in module_times(records)] == ["tests/b.py", "tests/a.py"]


def test_the_summary_gives_the_total_steps_and_the_image_builds_share() -> None:
    start = 1000.0
    records = [
        {"kind": "step", "name": "start", "s": 0, "t": start},
        {"kind": "step", "name": "setup", "s": 60.0, "t": start + 60},
        {"kind": "image_build", "name": "base", "s": 150.0, "t": start + 210, "ok": True},
        {"kind": "image_build", "name": "gimp", "s": 90.0, "t": start + 300, "ok": False},
        {"kind": "cold_boot", "image": "gimp", "s": 80.0, "t": start + 400},
        _test("tests/vm/test_x.py::t", "call", 400.0),
    ]
    lines = summary_lines(records, now=start + 1200)
    assert lines[0].startswith("total: 20.0 min since the run started (budget: 45 min")
    assert lines[1] == "steps: setup 60 s"
    assert lines[2] == (
        "image builds (in the background): 4.0 min (20% of the total): base 150 s, gimp 90 s FAILED"
    )
    assert lines[3] == "VM cold boots: 1: gimp 80 s"
    assert "tests/vm/test_x.py" in lines[-1]
    report = report_lines(records, start + 1200)
    assert "## Image builds and VM cold boots" in report
    assert ["cold", "boot", "gimp", "80"] in [line.split() for line in report]


def test_records_append_whole_lines_and_a_torn_line_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "times.jsonl"
    monkeypatch.setenv("DESKLOOP_SUITE_TIMES", str(path))
    record_time("cold_boot", image="web", s=12.5)
    with open(path, "a") as out:
        out.write('{"kind": "test", "id": "x"')  # a writer killed mid-line
    (only,) = list(read_times(path))
    assert only["kind"] == "cold_boot" and only["image"] == "web" and only["s"] == 12.5
    monkeypatch.delenv("DESKLOOP_SUITE_TIMES")
    record_time("cold_boot", image="web", s=1.0)  # no times file: nothing written
    assert len(path.read_text().splitlines()) == 2


class _Item:
    """What the ordering reads of a collected test: its node id and markers."""

    def __init__(self, nodeid: str, desktop: bool = False) -> None:
        self.nodeid = nodeid
        self.desktop = desktop

    def get_closest_marker(self, name: str) -> object | None:
        return object() if name == "desktop" and self.desktop else None


def test_vm_modules_go_first_in_image_order_then_the_most_desktop_tests() -> None:
    items = [
        _Item("tests/test_a.py::quick"),
        _Item("tests/test_b.py::gui1", desktop=True),
        _Item("tests/vm/test_libvirt_web.py::web"),
        _Item("tests/test_b.py::gui2", desktop=True),
        _Item("tests/test_c.py::gui", desktop=True),
        _Item("tests/vm/test_images.py::build"),
        _Item("tests/test_a.py::quick2"),
    ]
    pytest_collection_modifyitems(None, items)  # type: ignore[arg-type]
    assert [i.nodeid for i in items] == [
        "tests/vm/test_images.py::build",
        "tests/vm/test_libvirt_web.py::web",
        "tests/test_b.py::gui1",
        "tests/test_b.py::gui2",
        "tests/test_c.py::gui",
        "tests/test_a.py::quick",
        "tests/test_a.py::quick2",
    ]


def test_the_library_sample_is_a_unit_per_app_ordered_by_its_desktop_tests() -> None:
    sample = "tests/tasks/test_library_sample.py::test_a_sampled_task_is_proven"
    items = [
        _Item(f"{sample}[gimp/gimp-a-reference]", desktop=True),
        _Item(f"{sample}[web/web-a-reference]", desktop=True),
        _Item("tests/test_b.py::gui", desktop=True),
        _Item(f"{sample}[web/web-a-null]", desktop=True),
        _Item(f"{sample}[web/web-a-untouched]", desktop=True),
        _Item(f"{sample}[gimp/gimp-a-null]", desktop=True),
    ]
    pytest_collection_modifyitems(None, items)  # type: ignore[arg-type]
    assert [i.nodeid.rsplit("[", 1)[-1] for i in items] == [
        "web/web-a-reference]",
        "web/web-a-null]",
        "web/web-a-untouched]",
        "gimp/gimp-a-reference]",
        "gimp/gimp-a-null]",
        "tests/test_b.py::gui",
    ]
    assert {_scope_of(i.nodeid) for i in items} == {
        "tests/tasks/test_library_sample.py::web",
        "tests/tasks/test_library_sample.py::gimp",
        "tests/test_b.py",
    }


def test_under_xdist_the_vm_modules_share_one_worker_and_other_modules_stay_whole(
    tmp_path: Path,
) -> None:
    """A small suite on three real xdist workers: every test under tests/vm/ runs on
    one worker, each other module on one worker, and the times file has every phase."""
    suite = tmp_path / "tests"
    (suite / "vm").mkdir(parents=True)
    (suite / "conftest.py").write_text('pytest_plugins = ["tests.suite_plugin"]\n')
    body = "import os\n" + "".join(
        f"def test_{n}():\n    print(os.environ['PYTEST_XDIST_WORKER'])\n" for n in range(4)
    )
    for name in ("vm/test_images.py", "vm/test_libvirt.py", "vm/test_libvirt_web.py"):
        (suite / name).write_text(body)
    for name in ("test_one.py", "test_two.py", "test_three.py", "test_four.py"):
        (suite / name).write_text(body)
    times = tmp_path / "times.jsonl"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DESKLOOP_SUITE_TIMES": str(times),
    }
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "3", "-p", "no:cacheprovider",
         "--rootdir", str(tmp_path), "-c", os.devnull, str(suite)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    records = [r for r in read_times(times) if r["kind"] == "test"]
    assert len(records) == 7 * 4 * 3  # setup, call, teardown of 28 tests
    workers: dict[str, set[str]] = {}
    for r in records:
        module = str(r["id"]).split("::")[0]
        workers.setdefault(module, set()).add(str(r["worker"]))
    vm_workers = set().union(*(w for m, w in workers.items() if m.startswith("tests/vm/")))
    assert len(vm_workers) == 1, workers
    assert all(len(w) == 1 for w in workers.values()), workers
    assert len(set().union(*workers.values())) == 3, workers  # the others got work too
    assert "suite time" in run.stdout


def test_bench_suite_compares_two_runs_module_by_module(tmp_path: Path) -> None:
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    old.write_text(
        json.dumps(_test("tests/a.py::x", "call", 100.0))
        + "\n"
        + json.dumps(_test("tests/b.py::x", "call", 50.0))
        + "\n"
    )
    new.write_text(
        json.dumps(_test("tests/a.py::x", "call", 40.0))
        + "\n"
        + json.dumps(_test("tests/b.py::x", "call", 50.0))
        + "\n"
        + json.dumps(_test("tests/c.py::x", "call", 30.0))
        + "\n"
    )
    out = subprocess.run(
        [sys.executable, "bench/bench_suite.py", "--compare", str(old), str(new)],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    assert out[0] == "test time: 2.5 min → 2.0 min (0.80×)"
    assert [line.split()[-1] for line in out[2:]] == ["tests/a.py", "tests/c.py"]
    assert out[2].split()[:3] == ["-60", "100", "40"]
    missing = subprocess.run(
        [sys.executable, "bench/bench_suite.py", str(tmp_path / "none.jsonl")],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert missing.returncode != 0 and "none.jsonl: no such times file" in missing.stderr
