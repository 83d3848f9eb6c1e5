"""Where the test suite's time goes: per module, per slow fixture, image builds and VM
cold boots, and the slowest tests; or what a change added, run against run.

    .venv/bin/python bench/bench_suite.py [TIMES]            # the tables of one run
    .venv/bin/python bench/bench_suite.py --compare OLD NEW  # module by module
    .venv/bin/python bench/bench_suite.py --run [--fresh-cache DIR] [-- PYTEST-ARGS]

Every run of scripts/test.sh (the README's test command, and so `.ci/run`) writes its
times to sessions/suite-times/last.jsonl and keeps the run before as previous.jsonl
(tests/suite_plugin.py, tests/suite_times.py); TIMES defaults to last.jsonl, and
`--compare` with no files compares previous.jsonl with last.jsonl. `--run` runs
scripts/test.sh first; `--fresh-cache DIR` points it at an empty image cache
($DESKLOOP_CACHE), so every VM image is built and every VM cold-booted as on a fresh
machine (what remains of a fresh machine is apt's install, timed as the setup step of
a run on one). docs/testing.md keeps the tables of a fresh-machine run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMES_DIR = ROOT / "sessions" / "suite-times"


def _records(path: Path) -> list[dict[str, object]]:
    from tests.suite_times import read_times

    if not path.is_file():
        sys.exit(f"bench_suite: {path}: no such times file (run scripts/test.sh first)")
    records = list(read_times(path))
    if not records:
        sys.exit(f"bench_suite: {path}: no timing records in it")
    return records


def _end(records: list[dict[str, object]]) -> float:
    return max(float(str(r["t"])) for r in records)


def _compare(old_path: Path, new_path: Path) -> list[str]:
    from tests.suite_times import module_times

    old = {m.module: m for m in module_times(_records(old_path))}
    new = {m.module: m for m in module_times(_records(new_path))}
    rows = []
    for name in sorted(set(old) | set(new)):
        before = old[name].total if name in old else 0.0
        after = new[name].total if name in new else 0.0
        rows.append((after - before, name, before, after))
    rows.sort(key=lambda r: -abs(r[0]))
    total_old = sum(m.total for m in old.values())
    total_new = sum(m.total for m in new.values())
    ratio = f" ({total_new / total_old:.2f}×)" if total_old else ""
    lines = [
        f"test time: {total_old / 60:.1f} min → {total_new / 60:.1f} min{ratio}",
        f"{'change s':>9}  {'before s':>9}  {'after s':>9}  module",
    ]
    for delta, name, before, after in rows:
        if abs(delta) >= 1.0:
            lines.append(f"{delta:+9.0f}  {before:9.0f}  {after:9.0f}  {name}")
    return lines


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(ROOT))
    from tests.suite_times import report_lines

    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("times", nargs="?", type=Path, default=TIMES_DIR / "last.jsonl")
    parser.add_argument(
        "--compare",
        nargs="*",
        type=Path,
        metavar="FILE",
        help="compare two runs (OLD NEW; default previous.jsonl and last.jsonl)",
    )
    parser.add_argument("--run", action="store_true", help="run scripts/test.sh first")
    parser.add_argument(
        "--fresh-cache",
        type=Path,
        metavar="DIR",
        help="with --run: build every image into DIR (must be empty or absent)",
    )
    parser.add_argument("--top", type=int, default=25, help="rows of the slowest tables")
    argv = sys.argv[1:] if argv is None else argv
    pytest_args = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = parser.parse_args(argv[: len(argv) - len(pytest_args) - (1 if pytest_args else 0)])

    if args.compare is not None:
        files = args.compare or [TIMES_DIR / "previous.jsonl", TIMES_DIR / "last.jsonl"]
        if len(files) != 2:
            parser.error("--compare takes two files, OLD NEW, or none")
        print("\n".join(_compare(files[0], files[1])))
        return 0
    if args.run:
        env = dict(os.environ)
        if args.fresh_cache is not None:
            if args.fresh_cache.exists() and any(args.fresh_cache.iterdir()):
                parser.error(f"--fresh-cache {args.fresh_cache}: not empty")
            env["DESKLOOP_CACHE"] = str(args.fresh_cache.resolve())
        t0 = time.monotonic()
        code = subprocess.call(["bash", "scripts/test.sh", *pytest_args], cwd=ROOT, env=env)
        print(f"\nscripts/test.sh exited {code} after {(time.monotonic() - t0) / 60:.1f} min\n")
        args.times = TIMES_DIR / "last.jsonl"
    records = _records(args.times)
    print("\n".join(report_lines(records, _end(records), args.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
