"""`deskloop` with no command, and `deskloop tui`, open the terminal UI."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from app.cli import build_parser, main, tui_cmd


def test_no_command_opens_the_tui(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    opened: list[argparse.Namespace] = []

    def fake_tui(args: argparse.Namespace) -> int:
        opened.append(args)
        return 0

    # Only the dispatch is under test here; the app itself is tested with Pilot.
    monkeypatch.setattr(tui_cmd, "cmd_tui", fake_tui)
    assert main(["--db", str(tmp_path / "x.db")]) == 0
    assert len(opened) == 1 and opened[0].db == tmp_path / "x.db"


def test_tui_options() -> None:
    args = build_parser().parse_args(["tui", "--screen", "results"])
    assert args.func is tui_cmd.cmd_tui and args.screen == "results" and args.backend == "local"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["tui", "--screen", "nowhere"])
