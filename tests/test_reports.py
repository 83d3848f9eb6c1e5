"""Reports over a real store: grouping, rates over finished episodes, a batch's final
slots only, a self-contained HTML page, and a JSONL export that `datasets` loads."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

import pytest

from app.metrics.report import build_report, format_report, render_html, write_jsonl
from app.store import Store


def add_episode(
    store: Store,
    *,
    task: str = "gimp-a",
    app: str = "gimp",
    level: str = "L1",
    interactive: bool = False,
    agent: str = "reference",
    status: Literal["finished", "error"] = "finished",
    passed: bool = True,
    score: float = 1.0,
    steps: int = 3,
    asks: int = 0,
    batch: str | None = None,
    slot: tuple[str, int, int] | None = None,
) -> int:
    eid = store.start_episode(
        task_id=task,
        task_path=f"tasks/{app}/{task}.yaml",
        task_sha256="0" * 64,
        app=app,
        level=level,
        interactive=interactive,
        agent=agent,
        user_mode="simulated",
        backend="local",
        batch_id=batch,
    )
    if slot is not None:
        store.tag_batch_slot(eid, agent=slot[0], repeat=slot[1], attempt=slot[2])
    store.record_message(eid, role="user", kind="instruction", text="Do it.", step=0, source="task")
    png = b"\x89PNG fake frame bytes"  # the store keeps frame bytes as given
    frame = store.save_frame(eid, 0, png)
    actions: list[dict[str, Any]] = [
        {"kind": "click", "x": 1, "y": 2, "button": "left", "count": 1},
        {"kind": "type", "text": "hi"},
        {"kind": "rejected", "raw": {"name": "nope", "arguments": "{"}},
    ]
    for idx in range(steps):
        action = actions[idx % len(actions)]
        store.record_step(
            eid,
            idx=idx,
            action=action,
            kind=action["kind"],
            description=action["kind"],
            started_at=1_764_480_000.0 + idx,
            agent_seconds=0.5,
            act_seconds=0.01,
            settle_seconds=0.2,
            frame=frame,
            phase_index=None,
            active_message_id=None,
            error="unknown tool" if action["kind"] == "rejected" else None,
            agent_info={"prompt_tokens": 100 + idx, "tool_call": {"name": action["kind"]}}
            if agent.startswith("openai")
            else None,
        )
    for n in range(asks):
        store.record_message(
            eid, role="agent", kind="question", text=f"q{n}?", step=n, source="agent"
        )
        store.record_message(
            eid, role="user", kind="answer", text="No idea.", step=n, source="simulated"
        )
    if status == "finished":
        store.record_score(
            eid,
            passed=passed,
            score=score,
            checks=[
                {"path": "all/0", "name": "file_exists", "passed": passed, "score": score},
                {
                    "path": "all/1",
                    "name": "image_size",
                    "params": {"width": 400},
                    "passed": passed,
                    "score": score,
                    "weight": 2.0,
                },
            ],
        )
    store.finish_episode(
        eid,
        status=status,
        end_reason="done" if status == "finished" else "error",
        steps=steps,
        error=None if status == "finished" else "Desktop error: did not start",
    )
    return eid


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
    report = build_report(store)
    groups = {(g.level, g.mode, g.agent): g for g in report.groups}
    assert set(groups) == {
        ("L1", "standard", "reference"),
        ("L1", "standard", "openai:m"),
        ("L2", "interactive", "openai:m"),
    }
    model = groups[("L1", "standard", "openai:m")]
    assert (model.episodes, model.finished, model.errors) == (3, 2, 1)
    assert model.success_rate == 0.5 and model.mean_score == 0.75 and model.mean_steps == 5.0
    assert model.ask_rate == 0.5 and model.asks_per_episode == 1.0
    reference = groups[("L1", "standard", "reference")]
    assert reference.success_rate == 1.0 and reference.mean_steps == 10.0
    assert reference.ask_rate == 0.0
    overall = {g.agent: g for g in report.by_agent}
    assert overall["openai:m"].episodes == 4 and overall["openai:m"].finished == 3
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
    report = build_report(store, "b")
    (group,) = report.groups
    assert (group.episodes, group.errors, group.success_rate) == (2, 0, 0.0)


def test_html_is_self_contained(store: Store) -> None:
    page = render_html(build_report(store))
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") == 3
    assert "<script" not in page.lower()
    assert not re.search(r"(src|href)\s*=", page)  # nothing loaded from anywhere
    assert "openai:m" in page and "<table>" in page


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
    assert html_path.read_text().count("<svg") == 3
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
