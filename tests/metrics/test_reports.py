"""Reports over a real store: grouping, rates over finished episodes, a batch's final
slots only, a self-contained HTML page from the template with matplotlib plots, and a
JSONL export that `datasets` loads."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from lxml import etree
from lxml import html as lxml_html

from app.metrics.html_report import render_html
from app.metrics.report import format_report, write_jsonl
from app.metrics.scores import scored_report
from app.metrics.summary import cells, summarize
from app.store import Store
from tests.recorded_episodes import add_episode


@pytest.fixture
def store() -> Store:
    s = Store.memory()
    add_episode(s, agent="reference", score=1.0, passed=True, steps=9)
    add_episode(s, agent="reference", score=1.0, passed=True, steps=11)
    add_episode(s, agent="openai:m", score=0.5, passed=False, steps=4, asks=2)
    add_episode(s, agent="openai:m", score=1.0, passed=True, steps=6)
    add_episode(s, agent="openai:m", status="error", steps=1)
    add_episode(s, task="gimp-b", level="L2", interactive=True, agent="openai:m", asks=1)
    return s


def test_groups_and_rates_over_finished_episodes(store: Store) -> None:
    report = summarize(store)
    groups = {(g.level, g.kind, g.agent): g for g in report.groups}
    assert set(groups) == {
        ("L1", "standard", "reference"),
        ("L1", "standard", "openai:m"),
        ("L2", "interactive", "openai:m"),
    }
    assert {g.user for g in report.groups} == {"simulated"}
    model = groups[("L1", "standard", "openai:m")]
    assert (model.episodes, model.finished, model.errors, model.aborted) == (3, 2, 1, 0)
    assert model.success_rate == 0.5 and model.mean_score == 0.75 and model.mean_steps == 5.0
    assert model.ask_rate == 0.5 and model.asks_per_episode == 1.0
    reference = groups[("L1", "standard", "reference")]
    assert reference.success_rate == 1.0 and reference.mean_steps == 10.0
    assert reference.ask_rate == 0.0
    by_agent = {g.agent: g for g in report.by_agent}
    assert by_agent["openai:m"].episodes == 4 and by_agent["openai:m"].finished == 3
    assert report.overall is not None and report.overall.success_rate == 4 / 5
    text = format_report(report)
    assert "openai:m" in text and "50%" in text and "interactive" in text


def test_a_batch_counts_each_slot_once(store: Store) -> None:
    store.create_batch(
        "b",
        {
            "tasks": [{"id": "gimp-a", "path": "x", "sha256": "0" * 64}],
            "agents": ["null"],
            "repeats": 2,
        },
    )
    add_episode(store, agent="null", status="error", batch="b", slot=("null", 0, 0))
    add_episode(store, agent="null", passed=False, score=0.0, batch="b", slot=("null", 0, 1))
    add_episode(store, agent="null", passed=False, score=0.0, batch="b", slot=("null", 1, 0))
    (group,) = summarize(store, "b").groups
    assert (group.episodes, group.errors, group.retries, group.success_rate) == (2, 0, 1, 0.0)
    # Over the whole database the slot counts once too: its error try is a retry.
    everything = {g.agent: g for g in summarize(store).by_agent}
    assert (everything["null"].episodes, everything["null"].retries) == (2, 1)


def parse_page(page: str) -> etree._Element:
    """The page parsed twice: as strict XML, so any unescaped `<` or `&` fails, and
    as HTML the way a browser's parser reads it; returns the HTML tree."""
    etree.fromstring(page.encode(), etree.XMLParser(resolve_entities=False, no_network=True))
    return lxml_html.document_fromstring(page)


def test_html_page_parses_is_self_contained_and_holds_the_figures(store: Store) -> None:
    summary = summarize(store)
    page = render_html(scored_report(store, None))
    assert page.startswith("<!DOCTYPE html>")
    tree = parse_page(page)
    assert "<script" not in page.lower() and "<link" not in page.lower()
    # Nothing is loaded from anywhere: every reference points into the page.
    assert all(ref.startswith("#") for ref in re.findall(r'(?:src|href)\s*=\s*"([^"]*)"', page))
    assert all(ref.startswith("#") for ref in re.findall(r"url\(([^)]*)\)", page))
    assert "DOCTYPE svg" not in page  # matplotlib's prolog names a DTD URL
    # The tables hold the summary's figures, cell for cell.
    rows = [[td.text_content() for td in tr.xpath("td")] for tr in tree.xpath("//tbody/tr")]
    assert rows[: len(summary.groups) + len(summary.totals)] == [
        cells(g) for g in [*summary.groups, *summary.totals]
    ]
    # Three real plots: matplotlib SVG with the groups as tick labels, one id each.
    svgs = tree.xpath("//*[local-name()='svg']")
    assert [s.get("id") for s in svgs] == ["success", "outcomes", "credit", "checks"]
    for svg in svgs[:3]:
        labels = {t.text_content() for t in svg.xpath(".//*[local-name()='text']")}
        assert {g.label for g in summary.groups} <= labels
    assert "1/2" in page and "aborted" in page  # k/n beside a bar; the outcomes legend
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids))
    # The errored episode is listed with its reason.
    assert "Desktop error: did not start" in page


def test_html_escapes_hostile_task_ids_agents_and_messages() -> None:
    hostile_task = '<script>alert("task")</script>'
    hostile_agent = '"><img src=x onerror=alert(1)> $a$ --> &amp;'
    hostile_error = "</td></table><script>alert(2)</script> <!-- & -->"
    with Store.memory() as store:
        add_episode(store, task=hostile_task, agent=hostile_agent)
        add_episode(
            store, task=hostile_task, agent=hostile_agent, status="error", error=hostile_error
        )
        page = render_html(scored_report(store, None))
    tree = parse_page(page)
    assert "<script" not in page and "<img" not in page
    assert not tree.xpath("//script | //img | //*[@onerror]")
    text = tree.text_content()
    assert hostile_task in text and hostile_error in text
    # The agent, as written, in the tables and in every plot's labels.
    assert sum(hostile_agent in td.text_content() for td in tree.xpath("//td")) >= 3
    *group_plots, check_plot = tree.xpath("//*[local-name()='svg']")
    assert all(
        any(hostile_agent in t.text_content() for t in svg.xpath(".//*[local-name()='text']"))
        for svg in group_plots
    )
    # The task, as written, in the per-check plot's labels.
    assert any(
        hostile_task in t.text_content() for t in check_plot.xpath(".//*[local-name()='text']")
    )


def test_html_without_episodes() -> None:
    with Store.memory() as store:
        page = render_html(scored_report(store, None))
    parse_page(page)
    assert "(no episodes)" in page and "<svg" not in page


def test_jsonl_export_has_one_schema_and_loads_with_datasets(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "episodes.jsonl"
    assert write_jsonl(store, path) == 6
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    keys = {tuple(sorted(line)) for line in lines}
    assert len(keys) == 1
    first = lines[0]
    assert first["messages"][0]["text"] == "Do it."
    assert json.loads(first["actions"][0]["action_json"])["x"] == 1
    assert Path(first["actions"][0]["frame"]).is_file()
    assert json.loads(first["checks"][1]["params_json"]) == {"width": 400}

    import datasets

    loaded = datasets.load_dataset(
        "json", data_files=str(path), split="train", cache_dir=str(tmp_path / "hf")
    )
    assert loaded.num_rows == 6
    assert loaded.column_names == list(first)
    assert [line["outcome"] for line in lines] == [
        "passed",
        "passed",
        "failed",
        "passed",
        "error",
        "passed",
    ]
    model_row = loaded[2]
    assert model_row["agent"] == "openai:m" and model_row["score"] == 0.5
    assert json.loads(model_row["actions"][2]["action_json"])["kind"] == "rejected"
    assert json.loads(model_row["actions"][0]["agent_info_json"])["prompt_tokens"] == 100
    assert [m["kind"] for m in model_row["messages"]][1:3] == ["question", "answer"]


def test_report_and_batch_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from app.cli import main

    db = tmp_path / "db.sqlite"
    with Store(db) as s:
        s.create_batch(
            "nightly",
            {
                "tasks": [{"id": "gimp-a", "path": "x", "sha256": "0" * 64}],
                "agents": ["null"],
                "repeats": 1,
            },
        )
        add_episode(s, agent="null", passed=False, score=0.0, batch="nightly", slot=("null", 0, 0))
        add_episode(s, agent="reference")
    html_path, jsonl_path = tmp_path / "r.html", tmp_path / "e.jsonl"
    argv = ["--db", str(db), "report", "--html", str(html_path), "--jsonl", str(jsonl_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "Report: all episodes" in out and "reference" in out and "null" in out
    assert html_path.read_text().count("<svg") == 4  # three of the groups, one of the checks
    assert len(jsonl_path.read_text().splitlines()) == 2

    assert main(["--db", str(db), "report", "--batch", "nightly"]) == 0
    out = capsys.readouterr().out
    assert "Report: batch nightly" in out and "reference" not in out

    assert main(["--db", str(db), "batch", "list"]) == 0
    assert "nightly" in capsys.readouterr().out
    assert main(["--db", str(db), "batch", "show", "nightly", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["agent"] == "null" and row["status"] == "finished" and row["score"] == 0.0
    assert main(["--db", str(db), "batch", "show", "nightlly"]) == 2
    assert "did you mean nightly" in capsys.readouterr().err


def test_tokens_and_asks_per_episode(store: Store, tmp_path: Path) -> None:
    # The model episodes' steps report prompt tokens 100, 101, ... (recorded_episodes).
    report = summarize(store)
    groups = {(g.level, g.agent): g for g in report.groups}
    model = groups[("L1", "openai:m")]
    # Over the two attempts (the error is not one): 100..103 and 100..105.
    assert model.token_attempts == 2 and model.tokens == 406 + 615
    assert model.tokens_per_episode == (406 + 615) / 2
    assert groups[("L1", "reference")].tokens_per_episode is None
    text = format_report(report)
    # By agent: the L2 attempt too (3 steps: 100..102).
    assert "Model tokens by agent" in text and "441" in text
    path = tmp_path / "episodes.jsonl"
    write_jsonl(store, path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(line["agent"], line["total_tokens"], line["asks"]) for line in lines[:4]] == [
        ("reference", None, 0),
        ("reference", None, 0),
        ("openai:m", 406, 2),
        ("openai:m", 615, 0),
    ]
    assert lines[2]["prompt_tokens"] == 406 and lines[2]["completion_tokens"] == 0


def batch_with_a_group_of_no_successes(db: Path) -> None:
    """Batch `b`: the null agent 0 of 3 and the reference 3 of 3 on one task."""
    with Store(db) as s:
        s.create_batch(
            "b",
            {
                "tasks": [{"id": "gimp-a", "path": "x", "sha256": "0" * 64}],
                "agents": ["null", "reference"],
                "repeats": 3,
            },
        )
        for repeat in range(3):
            add_episode(
                s, agent="null", passed=False, score=0.0, batch="b", slot=("null", repeat, 0)
            )
            add_episode(s, agent="reference", batch="b", slot=("reference", repeat, 0))


def test_html_and_jsonl_of_a_batch_with_a_group_of_no_successes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from app.cli import main

    db = tmp_path / "db.sqlite"
    batch_with_a_group_of_no_successes(db)
    html_path, jsonl_path = tmp_path / "r.html", tmp_path / "e.jsonl"
    argv = ["--db", str(db), "report", "--batch", "b"]
    assert main([*argv, "--html", str(html_path), "--jsonl", str(jsonl_path)]) == 0
    assert f"wrote {html_path}" in capsys.readouterr().err
    page = parse_page(html_path.read_text())
    assert len(page.xpath("//*[local-name()='svg']")) == 4
    assert len(jsonl_path.read_text().splitlines()) == 6


def test_an_output_that_cannot_be_written_is_named_and_the_others_are_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from app.cli import main

    db = tmp_path / "db.sqlite"
    batch_with_a_group_of_no_successes(db)
    taken = tmp_path / "taken"  # a folder where the page should go
    taken.mkdir()
    jsonl_path = tmp_path / "e.jsonl"
    argv = ["--db", str(db), "report", "--html", str(taken), "--jsonl", str(jsonl_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"not written: {taken} (--html):" in err
    assert len(jsonl_path.read_text().splitlines()) == 6
    assert taken.is_dir() and not any(taken.iterdir())
    assert not list(tmp_path.glob("*.tmp"))  # nothing half-written left beside it


def test_every_label_of_every_plot_lies_inside_its_figure() -> None:
    # The library's longest task id, a long model name and a person as the user: the
    # widest row labels a report shows, which leave the plots their narrowest axes.
    from matplotlib.text import Text

    from app.metrics.plots import figures, style

    task = "web-studio-interview-series-l3-interactive"
    with Store.memory() as store:
        for agent in ("anthropic:claude-sonnet-4-5-20250929", "null"):
            add_episode(store, task=task, app="web", level="L3", interactive=True, agent=agent)
            add_episode(store, task=task, app="web", level="L3", agent=agent, user="person")
            add_episode(store, task=task, app="web", level="L3", agent=agent, passed=False)
        summary = summarize(store)
    with style():
        made = list(figures(summary.groups, summary.checks))
        assert [name for name, _, _ in made] == ["success", "outcomes", "credit", "checks"]
        for name, _, fig in made:
            fig.draw_without_rendering()
            box = fig.bbox
            # The bars keep a third of the width, however long the row labels.
            (axes,) = fig.axes
            assert axes.bbox.width >= box.width / 3, f"{name}: axes {axes.bbox.bounds}"
            for text in fig.findobj(Text):
                if not text.get_visible() or not text.get_text():
                    continue
                extent = text.get_window_extent()
                assert (
                    extent.x0 >= box.x0 - 0.5
                    and extent.x1 <= box.x1 + 0.5
                    and extent.y0 >= box.y0 - 0.5
                    and extent.y1 <= box.y1 + 0.5
                ), f"{name}: {text.get_text()!r} at {extent.bounds} outside {box.bounds}"


def rescored_and_flagged(db: Path) -> tuple[int, int]:
    """Two passed episodes of gimp-a: the first re-scored to a failure (its second check
    fails), the second flagged (a terminal ran). Returns their ids."""
    from app.core.integrity import IntegrityFlag
    from tests.check_outcomes import outcome

    with Store(db) as s:
        rescored, flagged = add_episode(s), add_episode(s)
        s.record_rescore(
            rescored,
            task_sha256="1" * 64,
            evaluator="test",
            passed=False,
            score=0.0,
            checks=[
                outcome("all/0", passed=True, score=1.0),
                outcome("all/1", "image_size", params={"width": 400}, passed=False, score=0.0),
            ],
        )
        s.record_flags(flagged, [IntegrityFlag("process", "xterm ran")], ["processes"])
    return rescored, flagged


@pytest.mark.parametrize("score", ["original", "latest"])
def test_html_page_says_which_score_it_counts_and_the_integrity_split(
    score: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from app.cli import main

    db = tmp_path / "db.sqlite"
    rescored_and_flagged(db)
    html_path = tmp_path / "r.html"
    assert main(["--db", str(db), "report", "--score", score, "--html", str(html_path)]) == 0
    text = capsys.readouterr().out.splitlines()
    (score_line,) = [line for line in text if line.startswith("scores: ")]
    (integrity_line,) = [line for line in text if line.startswith("integrity: ")]
    assert "1 counted episode(s) flagged" in integrity_line
    page = parse_page(html_path.read_text())
    shown = [" ".join(p.text_content().split()) for p in page.xpath("//p")]
    assert score_line in shown and integrity_line in shown
