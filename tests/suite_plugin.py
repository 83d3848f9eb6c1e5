"""How the suite spends its time, and how it is spread over two workers.

Timing: with `$DESKLOOP_SUITE_TIMES` set (scripts/test.sh sets it), every test phase,
every fixture setup that takes a while, every image build and every VM cold boot is
appended to that file as one JSON line; `bench/bench_suite.py` turns the file into the
tables of docs/testing.md, and the end of the run prints its summary.

Spreading: under pytest-xdist (`-n 3`, as scripts/test.sh runs the suite) each module is
one unit of work, so its module-scoped desktops and VMs are made once, on one worker.
Every module under tests/vm/ is one unit together: those tests boot VMs under software
emulation, which takes both cores, so they run one after another on one worker and two
guests never starve each other. That unit starts first, because it is the longest, and
the units with the most real-desktop tests follow it; the many quick modules fill the
gaps at the end. The library sample's proof test is split into one unit per app
(SPLIT_BY_APP), so the apps' episodes spread over the workers.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from tests.suite_times import read_times, summary_lines

TIMES_ENV = "DESKLOOP_SUITE_TIMES"
VM_SCOPE = "tests/vm"
# The VM modules in the order scripts/test.sh builds their images in the background,
# so each finds its image built (or being built) when it starts.
VM_ORDER = (
    "test_images.py",
    "test_libvirt.py",
    "test_libvirt_remote.py",
    "test_libvirt_gimp.py",
    "test_libvirt_integrity.py",
    "test_libvirt_web.py",
    "test_libvirt_kdenlive.py",
    "test_libvirt_blender.py",
    "test_vm_create.py",
)
# Modules whose one parametrised test spans the apps, with ids `app/...`: each app's
# part is a unit of its own, so their desktop episodes spread over the workers.
SPLIT_BY_APP = ("tests/tasks/test_library_sample.py",)
# Fixture setups shorter than this are not worth a line.
FIXTURE_FLOOR_S = 0.5


def record_time(kind: str, **fields: Any) -> None:
    """Append one timing record to the suite's times file (when the run keeps one).

    One short line per `write`, opened for append: lines from both workers and the
    background image builds interleave whole."""
    path = os.environ.get(TIMES_ENV)
    if not path:
        return
    line = json.dumps({"kind": kind, "t": round(time.time(), 3), **fields}) + "\n"
    with open(path, "a", encoding="utf-8") as out:
        out.write(line)


def _worker(config: pytest.Config) -> str:
    workerinput = getattr(config, "workerinput", None)
    return str(workerinput["workerid"]) if workerinput else "main"


def _module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _is_vm(nodeid: str) -> bool:
    return nodeid.startswith(VM_SCOPE + "/")


def _scope_of(nodeid: str) -> str:
    """The unit of work a test belongs to: all of tests/vm/, an app's part of a module
    split by app, or its module."""
    if _is_vm(nodeid):
        return VM_SCOPE
    module = _module_of(nodeid)
    if module in SPLIT_BY_APP and "[" in nodeid:
        return f"{module}::{nodeid.split('[', 1)[1].split('/', 1)[0]}"
    return module


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """VM modules first (in image order), then units of work by their count of
    real-desktop tests, most first; within a unit, the order pytest found."""
    desktop_tests: dict[str, int] = {}
    first_seen: dict[str, int] = {}
    for index, item in enumerate(items):
        unit = _module_of(item.nodeid) if _is_vm(item.nodeid) else _scope_of(item.nodeid)
        first_seen.setdefault(unit, index)
        if item.get_closest_marker("desktop") is not None:
            desktop_tests[unit] = desktop_tests.get(unit, 0) + 1

    def key(pair: tuple[int, pytest.Item]) -> tuple[int, int, int, int]:
        index, item = pair
        if _is_vm(item.nodeid):
            module = _module_of(item.nodeid)
            name = module.rsplit("/", 1)[-1]
            rank = VM_ORDER.index(name) if name in VM_ORDER else len(VM_ORDER)
            return (0, rank, first_seen[module], index)
        unit = _scope_of(item.nodeid)
        return (1, -desktop_tests.get(unit, 0), first_seen[unit], index)

    items[:] = [item for _, item in sorted(enumerate(items), key=key)]


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Modules as units of work, with every VM module in one unit and the modules of
    SPLIT_BY_APP split by app (see the docstring)."""
    from xdist.scheduler import LoadScopeScheduling

    class DesktopAwareScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return _scope_of(nodeid)

    config.option.loadscopereorder = False  # keep pytest_collection_modifyitems' order
    return DesktopAwareScheduling(config, log)


_IS_WORKER = False


def pytest_configure(config: pytest.Config) -> None:
    global _IS_WORKER
    # Read off this run's config, not the environment: a pytest started by a test
    # inherits the worker variables of the run around it.
    _IS_WORKER = hasattr(config, "workerinput")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # Under xdist the controller sees every worker's reports: recorded there once.
    if _IS_WORKER:
        return
    record_time(
        "test",
        id=report.nodeid,
        when=report.when,
        s=round(report.duration, 3),
        outcome=report.outcome,
        worker=_reporting_worker(report),
    )


def _reporting_worker(report: pytest.TestReport) -> str:
    """The xdist worker a report came from ("main" without xdist)."""
    node = getattr(report, "node", None)
    return str(node.gateway.id) if node is not None else "main"


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(
    fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
) -> Generator[None, None, None]:
    t0 = time.monotonic()
    yield
    seconds = time.monotonic() - t0
    if seconds >= FIXTURE_FLOOR_S:
        record_time(
            "fixture",
            name=fixturedef.argname,
            scope=fixturedef.scope,
            module=_module_of(request.node.nodeid),
            s=round(seconds, 3),
            worker=_worker(request.config),
        )


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """The run's total and the image builds' share, before pytest's closing line."""
    path = os.environ.get(TIMES_ENV)
    if not path or not Path(path).is_file() or _IS_WORKER:
        return

    terminalreporter.section("suite time")
    for line in summary_lines(list(read_times(Path(path))), time.time()):
        terminalreporter.write_line(line)
