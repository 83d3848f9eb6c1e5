"""Every speed figure of the lab in one run, each beside its limit or peer measured in
the same run (or its goal), as one table.

    .venv/bin/python bench/run_all.py [--quick] [--only NAME ...] [--markdown]

Runs each bench below as its own process, one after the other (never side by side:
they would share the CPU they measure), each with `--figures`, and reads back the
figures it printed (bench/figures.py). Each bench's own report is passed through to
stderr, so a long run shows its progress. `--quick` asks each bench for fewer repeats
(a smoke run; the figures are then rough). `--markdown` prints the table as
docs/performance.md keeps it.

The figures move with the machine's load: run it on a quiet machine, and read the
load average printed before and after.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from figures import Figure, parse

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Bench:
    name: str
    script: str
    args: tuple[str, ...]
    quick: tuple[str, ...]
    what: str


BENCHES = (
    Bench(
        "step",
        "bench_episode.py",
        ("--resets", "5", "--frames", "100", "--steps", "60", "--evidence-runs", "5"),
        ("--resets", "2", "--frames", "20", "--steps", "20"),
        "harness overhead per step, frame read, local reset and what it is made of, "
        "references' evidence over repeated runs",
    ),
    Bench(
        "vnc",
        "bench_vnc.py",
        ("--frames", "60", "--keys", "30"),
        ("--frames", "20", "--keys", "10"),
        "frame read and key → change: our RFB client beside vncdotool",
    ),
    Bench(
        "trials",
        "bench_trials.py",
        (),
        (),
        "the wait between two trials, the next desktop prepared ahead or not",
    ),
    Bench(
        "library",
        "bench_library.py",
        ("--tasks", "1000", "--runs", "3"),
        ("--tasks", "1000", "--runs", "1", "--skip-off"),
        "tasks list and the TUI's first screen on 1,000 tasks",
    ),
)


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min), {five:.1f} (5 min)"


def run(bench: Bench, quick: bool) -> tuple[list[Figure], float, str]:
    """The bench's figures, its seconds, and why it gave none ("" when it did)."""
    script = ROOT / "bench" / bench.script
    argv = [sys.executable, str(script), *(bench.quick if quick else bench.args), "--figures"]
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    sys.stderr.write(proc.stdout + proc.stderr)
    figures = parse(proc.stdout)
    if proc.returncode != 0:
        return figures, seconds, f"exit status {proc.returncode}"
    if not figures:
        return figures, seconds, "printed no figures"
    return figures, seconds, ""


def number(value: float, unit: str) -> str:
    if unit == "ms":
        return f"{value:.1f} ms"
    if unit == "s":
        return f"{value:.2f} s"
    return f"{value:g} {unit}".strip()


def table(rows: list[tuple[str, Figure]], markdown: bool) -> str:
    header = ("bench", "measure", "value", "against", "ratio")
    lines = []
    for name, f in rows:
        against = "" if f.against is None else f"{number(f.against, f.unit)} ({f.against_label})"
        ratio = "" if f.ratio is None else f"{f.ratio:.2f}×"
        lines.append((name, f.measure, number(f.value, f.unit), against, ratio))
    if markdown:
        out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(cells) + " |" for cells in lines]
        return "\n".join(out)
    widths = [max(len(row[i]) for row in (header, *lines)) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in (header, *lines)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer repeats (rough figures)")
    parser.add_argument(
        "--only", nargs="+", choices=[b.name for b in BENCHES], help="run only these benches"
    )
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown")
    args = parser.parse_args(argv)
    chosen = [b for b in BENCHES if not args.only or b.name in args.only]
    print(f"before: {load()}", flush=True)
    rows: list[tuple[str, Figure]] = []
    failed = []
    for bench in chosen:
        print(f"· {bench.name}: {bench.what} …", file=sys.stderr, flush=True)
        figures, seconds, why = run(bench, args.quick)
        print(f"· {bench.name}: {seconds:.0f} s", file=sys.stderr, flush=True)
        rows += [(bench.name, f) for f in figures]
        if why:
            failed.append(f"{bench.name} ({bench.script}): {why}")
    print(f"after: {load()}")
    print(table(rows, args.markdown))
    for line in failed:
        print(f"FAILED: {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
