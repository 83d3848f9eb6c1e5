"""The command line explains itself and reports bad input clearly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import build_parser, main
from app.episode.events import EpisodeResult

ROOT = Path(__file__).resolve().parents[2]


def subcommand_paths() -> list[list[str]]:
    paths: list[list[str]] = []

    def walk(parser: object, prefix: list[str]) -> None:
        for action in getattr(parser, "_actions", []):
            choices = getattr(action, "choices", None)
            if isinstance(choices, dict):
                for name, child in choices.items():
                    paths.append([*prefix, name])
                    walk(child, [*prefix, name])

    walk(build_parser(), [])
    return paths


def test_every_subcommand_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    paths = subcommand_paths()
    assert ["run"] in paths and ["tasks", "validate"] in paths and ["episodes", "show"] in paths
    for path in paths:
        with pytest.raises(SystemExit) as info:
            main([*path, "--help"])
        assert info.value.code == 0
        out = capsys.readouterr().out
        assert out.startswith("usage: deskloop"), path


def test_unknown_task_id_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--db", str(tmp_path / "db"), "run", "gimp-flip-exprt", "--agent", "null"])
    err = capsys.readouterr().err
    assert code == 2
    assert "no task with id 'gimp-flip-exprt'" in err and "did you mean gimp-flip-export" in err


def test_unknown_agent_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--db", str(tmp_path / "db"), "run", "gimp-flip-export", "--agent", "gpt"])
    assert code == 2
    assert "unknown agent 'gpt'" in capsys.readouterr().err


def test_missing_episode_names_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "db.sqlite"
    assert main(["--db", str(db), "episodes", "show", "42"]) == 2
    err = capsys.readouterr().err
    assert "no episode 42" in err and str(db) in err


def test_bad_script_file_names_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("- key: ctrl+escpe\n")
    code = main(
        ["--db", str(tmp_path / "db"), "run", "gimp-flip-export", "--agent", f"scripted:{script}"]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert f"{script}:1: steps[0]" in err and "escpe" in err


def test_run_json_of_an_errored_episode_has_no_score() -> None:
    errored = EpisodeResult(7, "gimp-flip-export", "error", "error", None, None, 0, "VNC error: x")
    payload = errored.as_json()
    assert payload["passed"] is None and payload["score"] is None
    finished = EpisodeResult(8, "gimp-flip-export", "finished", "done", False, 0.0, 3)
    assert (finished.as_json()["passed"], finished.as_json()["score"]) == (False, 0.0)


def test_a_closed_pipe_ends_a_command_quietly() -> None:
    # `deskloop tasks show ID | head`: the reader is gone before the command writes.
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "tasks", "show", "gimp-flip-export"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141, stderr
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr


def test_a_command_that_starts_desktops_first_removes_what_dead_runs_left(
    tmp_path: Path,
) -> None:
    """A Ray node's folder (or a desktop's session folder) whose owner died without its
    clean-up, as a SIGKILL leaves it, goes when the next command that starts desktops
    runs; a folder whose owner lives stays, and so does everything on a command that
    starts none."""
    from app.cli.desktops_cmd import starts_desktops
    from app.core.procfs import write_owner_file

    temp = tmp_path / "temp"
    temp.mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    left = temp / "deskloop-ray-node-left"
    left.mkdir()
    write_owner_file(left, dead.pid)
    (left / "node.db").write_bytes(b"")
    alive = temp / "deskloop-ray-node-alive"
    alive.mkdir()
    write_owner_file(alive)
    env = {**os.environ, "TMPDIR": str(temp)}

    def deskloop(*args: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "app.cli", "--db", str(tmp_path / "lab.db"), *args],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr

    deskloop("tasks", "list")
    assert left.exists()  # listing tasks starts no desktop
    deskloop("batch", "list")
    assert not left.exists() and alive.exists()
    parser = build_parser()
    assert starts_desktops(parser.parse_args(["tasks", "verify", "t"]))
    assert not starts_desktops(parser.parse_args(["episodes", "list"]))
