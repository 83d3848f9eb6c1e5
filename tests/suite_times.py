"""Reading a suite run's times file (tests/suite_plugin.py, scripts/test.sh) into tables.

Records, one JSON object a line, each with `kind` and `t` (Unix time written):

- `step`: a step of scripts/test.sh (`name`: setup, lint, pytest, ...; `s`: seconds), and
  `start` once, when the run began;
- `image_build`: one image built in the background (`name`, `s`, `ok`);
- `test`: one phase of one test (`id`, `when`: setup/call/teardown, `s`, `outcome`, `worker`);
- `fixture`: a fixture setup that took a while (`name`, `scope`, `module`, `s`, `worker`);
- `cold_boot`: a VM booted from nothing (`image`, `s`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BUDGET_MIN = 45.0


def read_times(path: Path) -> Iterator[dict[str, Any]]:
    """The records of a times file (a half-written line is skipped)."""
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and "kind" in record:
                yield record


@dataclass
class ModuleTime:
    module: str
    tests: int = 0
    setup: float = 0.0
    call: float = 0.0
    teardown: float = 0.0
    workers: set[str] = field(default_factory=set)

    @property
    def total(self) -> float:
        return self.setup + self.call + self.teardown


def module_times(records: list[dict[str, Any]]) -> list[ModuleTime]:
    """Each module's test time, most first."""
    modules: dict[str, ModuleTime] = {}
    for r in records:
        if r["kind"] != "test":
            continue
        module = str(r["id"]).split("::", 1)[0]
        entry = modules.setdefault(module, ModuleTime(module))
        seconds = float(r["s"])
        when = r["when"]
        if when == "setup":
            entry.setup += seconds
            entry.tests += 1
        elif when == "call":
            entry.call += seconds
        else:
            entry.teardown += seconds
        entry.workers.add(str(r.get("worker", "main")))
    return sorted(modules.values(), key=lambda m: -m.total)


def slowest_tests(records: list[dict[str, Any]]) -> list[tuple[str, float]]:
    """Each test's setup + call + teardown, slowest first."""
    totals: dict[str, float] = defaultdict(float)
    for r in records:
        if r["kind"] == "test":
            totals[str(r["id"])] += float(r["s"])
    return sorted(totals.items(), key=lambda pair: -pair[1])


def _of_kind(records: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r for r in records if r["kind"] == kind]


def _start(records: list[dict[str, Any]]) -> float | None:
    starts = [float(r["t"]) for r in records if r["kind"] == "step" and r["name"] == "start"]
    return min(starts) if starts else None


def summary_lines(records: list[dict[str, Any]], now: float) -> list[str]:
    """What every run prints at its end: the total, its steps, the image builds'
    share, the cold boots and the busiest modules."""
    lines: list[str] = []
    start = _start(records)
    total = now - start if start is not None else None
    if total is not None:
        lines.append(
            f"total: {total / 60:.1f} min since the run started "
            f"(budget: {BUDGET_MIN:.0f} min on a fresh 2-core machine)"
        )
    steps = [r for r in _of_kind(records, "step") if r["name"] != "start"]
    if steps:
        lines.append("steps: " + ", ".join(f"{r['name']} {float(r['s']):.0f} s" for r in steps))
    builds = _of_kind(records, "image_build")
    if builds:
        built = sum(float(r["s"]) for r in builds)
        share = f" ({100 * built / total:.0f}% of the total)" if total else ""
        names = ", ".join(
            f"{r['name']} {float(r['s']):.0f} s" + ("" if r.get("ok", True) else " FAILED")
            for r in builds
        )
        lines.append(f"image builds (in the background): {built / 60:.1f} min{share}: {names}")
    boots = _of_kind(records, "cold_boot")
    if boots:
        names = ", ".join(f"{r['image']} {float(r['s']):.0f} s" for r in boots)
        lines.append(f"VM cold boots: {len(boots)}: {names}")
    modules = module_times(records)
    if modules:
        test_total = sum(m.total for m in modules)
        lines.append(
            f"test time: {test_total / 60:.1f} min over {sum(m.tests for m in modules)} tests "
            f"in {len(modules)} modules; the busiest:"
        )
        for m in modules[:8]:
            lines.append(f"  {m.total:7.0f} s  {m.tests:4d} tests  {m.module}")
    return lines


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)
    ]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(
            c.rjust(w) if i and c[:1].isdigit() else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return [line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]


def report_lines(records: list[dict[str, Any]], now: float, top: int = 25) -> list[str]:
    """The full report of bench/bench_suite.py: the summary, then tables per module,
    per slow fixture, of the expensive things (image builds and cold boots) and of
    the slowest tests."""
    out = summary_lines(records, now)
    modules = module_times(records)
    out += ["", "## Modules (seconds of test time; setup includes module fixtures)", ""]
    out += _table(
        ("module", "tests", "setup", "call", "teardown", "total", "worker"),
        [
            (
                m.module,
                str(m.tests),
                f"{m.setup:.1f}",
                f"{m.call:.1f}",
                f"{m.teardown:.1f}",
                f"{m.total:.1f}",
                ",".join(sorted(m.workers)),
            )
            for m in modules
        ],
    )
    fixtures = sorted(_of_kind(records, "fixture"), key=lambda r: -float(r["s"]))
    out += ["", "## Fixture setups over 0.5 s, slowest first", ""]
    out += _table(
        ("fixture", "scope", "module", "seconds"),
        [
            (str(r["name"]), str(r["scope"]), str(r["module"]), f"{float(r['s']):.1f}")
            for r in fixtures[:top]
        ],
    )
    expensive = [
        ("image build", str(r["name"]), float(r["s"])) for r in _of_kind(records, "image_build")
    ] + [("cold boot", str(r["image"]), float(r["s"])) for r in _of_kind(records, "cold_boot")]
    out += ["", "## Image builds and VM cold boots", ""]
    out += _table(("what", "image", "seconds"), [(w, n, f"{s:.0f}") for w, n, s in expensive])
    out += ["", f"## The {top} slowest tests (setup + call + teardown)", ""]
    out += _table(("test", "seconds"), [(i, f"{s:.1f}") for i, s in slowest_tests(records)[:top]])
    return out
