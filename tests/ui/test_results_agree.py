"""One database, one set of figures: the TUI's Results screen, `deskloop report` (text,
JSONL and HTML) and a hand computation agree.

The database holds every case the policy decides (app.metrics.summary): passed and
failed episodes (DONE on a wrong result, the agent's FAIL, a spent step budget, an
error of the agent's own), an infrastructure error, an abort, batch retries, a running
episode; two agents, two users. The TUI once counted errors as failures and every
retry, and `report` had no user in its groups, and every figure once left the agent's
own errors out: with any of those policies these figures differ.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Literal

import pytest
from lxml import html as lxml_html
from textual.widgets import DataTable, Static

from app.cli import main
from app.metrics.summary import COLUMNS, RELIABILITY_COLUMNS, reliability_cells, summarize
from app.store import Store
from app.ui.app import DeskLoopApp
from app.ui.screens.results import ResultsScreen
from tests.recorded_episodes import add_episode
from tests.ui.helpers import wait_until, write_tasks

SUITE = {
    "tasks": [{"id": "gimp-a", "path": "x", "sha256": "0" * 64}],
    "agents": ["reference", "openai:m"],
    "repeats": 2,
}

# By hand, from the episodes recorded below (columns: app.metrics.summary.COLUMNS).
EXPECTED = [
    # ep 5 passed, ep 6 aborted (out of the rates)
    "gimp L1 standard openai:m person 2 1 0 0 1 0 100% 1.00 6.0 100% 2.0",
    # slot (openai:m, 0) failed at 0.5 after one ask; slot (openai:m, 1) two errors
    # (infrastructure); ep 10 the agent's own error: a failure, credit 0, 3 steps
    "gimp L1 standard openai:m simulated 3 0 2 1 0 1 0% 0.25 3.5 50% 0.5",
    # slot (reference, 0) passed on its retry, slot (reference, 1) passed, ep 8 budget
    "gimp L1 standard reference simulated 3 2 1 0 0 1 67% 0.67 7.7 0% 0.0",
    # ep 7: the agent's FAIL, credit 0.35
    "gimp L2 interactive reference person 1 0 1 0 0 0 0% 0.35 3.0 0% 0.0",
    # 1 + 0.5 + 0 over 3 attempts; steps (6 + 4 + 3) / 3; 2 of 3 asked, 3 asks / 3
    "all all all openai:m all 5 1 2 1 1 1 33% 0.50 4.3 67% 1.0",
    # (1 + 1 + 0 + 0.35) / 4 = 0.5875; steps (5 + 8 + 10 + 3) / 4
    "all all all reference all 4 2 2 0 0 1 50% 0.59 6.5 0% 0.0",
    # 3 of 7 attempts passed; 3.85 / 7 = 0.55; 39 steps / 7; 2 of 7 asked, 3 asks / 7
    "all all all all all 9 3 4 1 1 2 43% 0.55 5.6 29% 0.4",
]


def build_database(path: Path) -> dict[str, list[int]]:
    """The episodes of EXPECTED; returns the ids that count and those that do not."""
    counted: list[int] = []
    left_out: list[int] = []
    with Store(path) as store:
        store.create_batch("b1", SUITE)

        def slot(
            agent: str,
            repeat: int,
            attempt: int,
            *,
            status: Literal["finished", "error"] = "finished",
            passed: bool = True,
            score: float = 1.0,
            steps: int,
            asks: int = 0,
        ) -> int:
            return add_episode(
                store,
                agent=agent,
                batch="b1",
                slot=(agent, repeat, attempt),
                status=status,
                passed=passed,
                score=score,
                steps=steps,
                asks=asks,
            )

        left_out.append(slot("reference", 0, 0, status="error", steps=0))
        counted.append(slot("reference", 0, 1, steps=5))
        counted.append(slot("reference", 1, 0, steps=8))
        counted.append(slot("openai:m", 0, 0, passed=False, score=0.5, steps=4, asks=1))
        left_out.append(slot("openai:m", 1, 0, status="error", steps=2))
        counted.append(slot("openai:m", 1, 1, status="error", steps=1))
        counted.append(add_episode(store, agent="openai:m", user="person", steps=6, asks=2))
        counted.append(
            add_episode(
                store,
                agent="openai:m",
                user="person",
                status="error",
                end_reason="aborted",
                error="aborted by the person in the loop",
                steps=2,
            )
        )
        counted.append(
            add_episode(
                store,
                task="gimp-b",
                level="L2",
                interactive=True,
                user="person",
                passed=False,
                score=0.35,
                end_reason="fail",
                steps=3,
            )
        )
        counted.append(
            add_episode(store, passed=False, score=0.0, end_reason="step_budget", steps=10)
        )
        counted.append(
            add_episode(
                store,
                agent="openai:m",
                status="error",
                error="Agent error: the model answered with no usable action",
                error_kind="agent",
                steps=3,
            )
        )
        left_out.append(add_episode(store, status="running"))
    return {"counted": counted, "left_out": left_out}


def text_rows(out: str) -> list[str]:
    """The figure rows of a printed table, as space-joined cells, whatever the borders
    (plain columns or box drawing): every cell here is one word."""
    rows = []
    for line in out.splitlines():
        cells = [c for c in re.split(r"[\s│┃║|]+", line) if c]
        if len(cells) == len(COLUMNS) and cells != COLUMNS and cells[0].isalpha():
            rows.append(" ".join(cells))
    return rows


async def tui_rows(db: Path, tasks: Path) -> tuple[list[str], list[list[str]], str]:
    """The Results screen's figures, its reliability table's rows (cell by cell) and
    the text of its checkpoint tables."""
    lab = DeskLoopApp(db=db, tasks_dir=tasks, start_mode="results")
    async with lab.run_test(size=(160, 50)) as pilot:
        await wait_until(pilot, lambda: isinstance(lab.screen, ResultsScreen), 5, "results")
        screen = lab.screen
        assert isinstance(screen, ResultsScreen)
        await wait_until(pilot, lambda: screen.loaded, 5, "the results read")
        table = lab.screen.query_one("#results-table", DataTable)
        header = [str(c.label) for c in table.ordered_columns]
        # The TUI puts success and credit right after the group; the figures are
        # compared in the report's order.
        assert sorted(header) == sorted(COLUMNS) and header[5:7] == ["success", "credit"]
        order = [header.index(c) for c in COLUMNS]
        reliability = lab.screen.query_one("#reliability-table", DataTable)
        assert [str(c.label) for c in reliability.ordered_columns] == RELIABILITY_COLUMNS
        checkpoints = lab.screen.query_one("#results-checkpoints", Static)
        return (
            [
                " ".join(str(table.get_row_at(i)[at]) for at in order)
                for i in range(table.row_count)
            ],
            [[str(c) for c in reliability.get_row_at(i)] for i in range(reliability.row_count)],
            str(checkpoints.render()),
        )


async def test_the_tui_and_the_report_show_the_same_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "deskloop.db"
    ids = build_database(db)
    jsonl, page = tmp_path / "episodes.jsonl", tmp_path / "report.html"

    assert main(["--db", str(db), "report", "--jsonl", str(jsonl), "--html", str(page)]) == 0
    capsys_text = capsys.readouterr().out
    report = text_rows(capsys_text)
    tui, tui_reliability, tui_checkpoints = await tui_rows(db, write_tasks(tmp_path / "tasks"))

    assert report == EXPECTED
    assert tui == EXPECTED
    # The reliability figures: the TUI's, the report's and the page's agree, and
    # match a hand computation on the rows that show the policy.
    summary = summarize(Store(db))
    reliability = [reliability_cells(g) for g in [*summary.groups, *summary.totals]]
    assert tui_reliability == reliability
    # openai:m, simulated: two attempts, the slot that failed at credit 0.5 after one
    # ask and ep 10, the agent's own error (no credit); the slot's infrastructure
    # errors are out. 0/2 passed, 1/2 at credit 0.5, none at 0.75 or 1, 1/2 asked.
    assert reliability[1][5:11] == [
        "2",
        "0% [0–66%]",
        "50% [9–91%]",
        "0% [0–66%]",
        "0% [0–66%]",
        "50% [9–91%]",
    ]
    # Everything: 7 attempts, 3 passed; credit ≥ 0.5: the 3 passes and 0.5 = 4.
    assert reliability[-1][5:8] == ["7", "43% [16–75%]", "57% [25–84%]"]
    text = capsys_text
    for shown in reliability:
        assert re.search(r"\s{2,}".join(re.escape(c) for c in shown), text), shown
    for line in ("Checks (leaf success):", "Repeats (pass@k, pass^k):", "Paired agents:"):
        assert line in tui_checkpoints and line in text
    tree = lxml_html.document_fromstring(page.read_text())
    cells = [[td.text_content() for td in tr.xpath("td")] for tr in tree.xpath("//tbody/tr")]
    assert [" ".join(c) for c in cells[: len(EXPECTED)]] == EXPECTED
    page_reliability = tree.xpath("//h2[text()='Reliability']/following-sibling::table[1]")[0]
    assert [
        [td.text_content() for td in tr.xpath("td")] for tr in page_reliability.xpath("tbody/tr")
    ] == reliability

    # The export holds exactly the counted episodes, and its outcomes give the rates.
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert [line["episode_id"] for line in lines] == ids["counted"]
    tally: dict[tuple[str, ...], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for line in lines:
        kind = "interactive" if line["interactive"] else "standard"
        key = (line["app"], line["level"], kind, line["agent"], line["user_mode"])
        tally[key][line["outcome"]] += 1
    for row in EXPECTED[:4]:
        cells_ = row.split()
        counts = tally[tuple(cells_[:5])]
        passed, failed = counts["passed"], counts["failed"]
        assert [str(passed), str(failed), str(counts["error"]), str(counts["aborted"])] == (
            cells_[6:10]
        )
        assert f"{passed / (passed + failed):.0%}" == cells_[11]
