"""`deskloop tasks import deskcraft PATH...`: DeskCraft task files → DeskLoop tasks."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from app.cli.common import print_err


def _sources(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        files.extend(sorted(path.rglob("*.json")) if path.is_dir() else [path])
    return files


def cmd_import_deskcraft(args: argparse.Namespace) -> int:
    # Imported here so `deskloop --help` does not load the converter.
    from app.importers.deskcraft.convert import convert

    repo: Path = args.repo
    if not repo.is_dir():
        print_err(f"--repo {repo}: not a folder (a local copy of DeskCraft's repository)")
        return 2
    if args.media is not None and not args.media.is_dir():
        print_err(f"--media {args.media}: not a folder")
        return 2
    counts = {"imported": 0, "manual": 0, "not importable": 0}
    taken: dict[str, Path] = {}
    for source in _sources(args.paths):
        report = convert(source, repo, args.out, taken, args.media)
        counts[report.status] += 1
        print(report.line())
    print(
        f"{counts['imported']} imported, {counts['manual']} imported with manual steps left, "
        f"{counts['not importable']} not importable"
    )
    return 0 if counts["not importable"] == 0 else 1


def register(tsub: Any) -> None:
    ti = tsub.add_parser("import", help="convert another benchmark's task files into tasks")
    isub = ti.add_subparsers(dest="import_format", metavar="FORMAT", required=True)
    dc = isub.add_parser(
        "deskcraft",
        help="DeskCraft (OSWorld-style JSON) GIMP, Blender and Kdenlive tasks",
        description="Convert DeskCraft task files into DeskLoop task folders under --out "
        "(<app>/<id>.yaml with assets/ copied from --repo). One line per file: imported, "
        "imported with the manual steps left named, or not importable and why. Exit 1 "
        "when any file is not importable.",
    )
    dc.add_argument("paths", nargs="+", type=Path, help="DeskCraft .json files or folders")
    dc.add_argument(
        "--repo",
        type=Path,
        required=True,
        help="a local copy of DeskCraft's repository (its assets/ are taken from there)",
    )
    dc.add_argument(
        "--media",
        type=Path,
        help="substitutes for files the repository copy lacks (its unpublished Git LFS "
        "objects): a folder laid out like its assets/ (glb/model.glb) or holding them by name",
    )
    dc.add_argument(
        "--out", type=Path, default=Path("tasks"), help="where tasks are written (default: tasks)"
    )
    dc.set_defaults(func=cmd_import_deskcraft)
