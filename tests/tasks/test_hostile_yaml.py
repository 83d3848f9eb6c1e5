"""Hostile YAML: the shared reader (app/core/validation.read_yaml) refuses what could
turn a task, suite, recipe or reference file against the lab, naming file and line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.core.errors import TaskError
from app.core.validation import MAX_YAML_BYTES, MAX_YAML_DEPTH
from app.tasks.loader import load_task

TASK = """\
id: hostile
app: gimp
level: L1
title: Hostile
instruction: Flip it.
evaluate:
  all:
    - {check: file_exists, path: ~/Desktop/out.png}
"""


def refusal(path: Path) -> str:
    with pytest.raises(TaskError) as info:
        load_task(path)
    text = str(info.value)
    assert str(path) in text, text
    return text


def write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "hostile.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def test_the_plain_task_loads(tmp_path: Path) -> None:
    assert load_task(write(tmp_path, TASK)).id == "hostile"


def test_an_alias_bomb_is_refused_before_it_expands(tmp_path: Path) -> None:
    # Nine levels of nine aliases: 9**9 leaves once expanded.
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 10):
        lines.append(f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * 9)}]")
    text = refusal(write(tmp_path, TASK + "\n".join(lines) + "\n"))
    assert "anchors and aliases" in text and "line 9" in text


def test_a_single_anchor_is_refused(tmp_path: Path) -> None:
    text = TASK.replace("title: Hostile", "title: &t Hostile")
    assert "anchors and aliases" in refusal(write(tmp_path, text))


def test_a_duplicate_key_names_both_lines(tmp_path: Path) -> None:
    text = refusal(
        write(tmp_path, TASK + "evaluate:\n  all: [{check: file_not_exists, path: x}]\n")
    )
    assert "duplicate key 'evaluate' (first at line 6)" in text and "line 9" in text


def test_a_duplicate_nested_key_is_refused(tmp_path: Path) -> None:
    text = TASK.replace("path: ~/Desktop/out.png}", "path: a, path: b}")
    assert "duplicate key 'path'" in refusal(write(tmp_path, text))


@pytest.mark.parametrize("depth", [MAX_YAML_DEPTH + 1, 250, 5000])
def test_deep_nesting_is_refused_without_a_recursion_error(tmp_path: Path, depth: int) -> None:
    trigger = "{any: [" * depth + "agent_done" + "]}" * depth
    phases = f"phases:\n  - message: more\n    trigger: {trigger}\n"
    text = refusal(write(tmp_path, TASK + phases))
    assert f"nested more than {MAX_YAML_DEPTH} levels deep" in text


def test_nesting_within_the_limit_loads(tmp_path: Path) -> None:
    depth = 8
    trigger = "{any: [" * depth + "agent_done" + "]}" * depth
    phases = f"phases:\n  - message: more\n    trigger: {trigger}\n"
    assert load_task(write(tmp_path, TASK + phases)).phases[0].message == "more"


def test_a_file_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    padding = "# " + "x" * 78 + "\n"
    text = TASK + padding * (MAX_YAML_BYTES // len(padding) + 1)
    assert f"the limit is {MAX_YAML_BYTES}" in refusal(write(tmp_path, text))


@pytest.mark.timeout(30)
def test_a_fifo_is_refused_and_never_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "hostile.yaml"
    os.mkfifo(fifo)  # no writer will ever come: opening it for reading would block
    assert "not a regular file" in refusal(fifo)


def test_a_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "hostile.yaml"
    folder.mkdir()
    refusal(folder)


def test_text_that_is_not_utf8_names_its_line(tmp_path: Path) -> None:
    data = TASK.replace("Flip it.", "Flip \xe9 it.").encode("latin-1")
    text = refusal(write(tmp_path, data))
    assert "line 5: not UTF-8 text" in text
