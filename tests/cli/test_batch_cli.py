"""`deskloop batch run` checks its libvirt URI pool before anything is recorded."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from app.cli import main

TASK = ["--task", "gimp-flip-export", "--agent", "null"]


def batch_run(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(["--db", str(tmp_path / "db.sqlite"), "batch", "run", *TASK, *extra])
    return code, capsys.readouterr().err


def batches(tmp_path: Path) -> int:
    db = tmp_path / "db.sqlite"
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM batches").fetchone()[0])


@pytest.mark.parametrize(
    ("uris", "message"),
    [
        (["lab2*2"], "--libvirt-uri 'lab2*2': 'lab2' is not a libvirt URI"),
        (["qemu:///system*0"], "capacity 0: a host runs at least 1 desktop"),
        (["qemu:///system*x"], "the capacity after '*' must be a whole number"),
        (["qemu:///system", "qemu:///system*2"], "qemu:///system is given twice"),
    ],
)
def test_bad_pool_entries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], uris: list[str], message: str
) -> None:
    argv = ["--backend", "libvirt"] + [a for uri in uris for a in ("--libvirt-uri", uri)]
    code, err = batch_run(tmp_path, capsys, *argv)
    assert code == 2 and message in err
    assert batches(tmp_path) == 0


def test_concurrency_above_the_pool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = batch_run(
        tmp_path,
        capsys,
        "--backend", "libvirt", "--concurrency", "4",
        "--libvirt-uri", "qemu:///system*2", "--libvirt-uri", "qemu+ssh://lab2/system",
    )  # fmt: skip
    assert code == 2
    assert "concurrency 4 is more than the pool's total capacity 3" in err
    assert "(qemu:///system*2 + qemu+ssh://lab2/system*1)" in err
    assert batches(tmp_path) == 0


def test_pool_from_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DESKLOOP_LIBVIRT_URIS", "qemu:///system*2,nohost")
    code, err = batch_run(tmp_path, capsys, "--backend", "libvirt")
    assert code == 2 and "DESKLOOP_LIBVIRT_URIS 'nohost': 'nohost' is not a libvirt URI" in err
    monkeypatch.setenv("DESKLOOP_LIBVIRT_URIS", "qemu:///system*2")
    code, err = batch_run(tmp_path, capsys, "--backend", "libvirt", "--concurrency", "3")
    assert code == 2 and "concurrency 3 is more than the pool's total capacity 2" in err
    # The local backend has no hosts: the variable does not concern it.
    code, err = batch_run(tmp_path, capsys, "--backend", "local", "--concurrency", "0")
    assert code == 2 and "concurrency must be at least 1, got 0" in err


def test_a_pool_needs_the_libvirt_backend(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = batch_run(tmp_path, capsys, "--libvirt-uri", "qemu:///system*2")
    assert code == 2 and "--libvirt-uri needs --backend libvirt, not local" in err
    assert batches(tmp_path) == 0


def test_phrasing_phases_needs_the_llm_user(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = batch_run(tmp_path, capsys, "--user-phrase-phases")
    assert code == 2 and "--user-phrase-phases needs --user llm" in err
    assert batches(tmp_path) == 0
