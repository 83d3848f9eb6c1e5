"""The scripted-agent (reference solution) file format: every reference the library
names loads, and a bad file is refused naming the file and the field."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from app.agents.reference_script import (
    Expect,
    Oracle,
    WaitFor,
    load_script,
    parse_script,
    read_script,
)
from app.core.actions import Click, Done, Key
from app.core.errors import AgentError
from app.tasks.loader import load_tasks

ROOT = Path(__file__).resolve().parents[2]


def test_every_reference_the_library_names_loads() -> None:
    tasks, errors = load_tasks(ROOT / "tasks")
    assert errors == []
    named = [task for task in tasks if task.reference is not None]
    assert len(named) >= 30, "the library's tasks name their reference solutions"
    kinds = set()
    for task in named:
        assert task.reference is not None
        path = task.folder / task.reference
        script = read_script(path)
        kinds.add(script.kind)
        entries = load_script(path)
        assert len(entries) == len(script.steps)
        assert isinstance(entries[-1], Done), f"{path} ends without DONE"
    assert kinds == {"demonstration", "oracle"}


def write(tmp_path: Path, text: str, name: str = "ref.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_a_mapping_script_with_every_kind_of_step(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        kind: oracle
        description: All the step kinds.
        steps:
          - click: {x: 3, y: 4, button: right}
          - {kind: key, combo: ctrl+s}
          - wait_for: {no_window: '^Save', timeout: 5, resend_every: 1}
          - expect: {message: 'smaller'}
          - oracle: [/bin/true]
          - oracle: {run: [sh, -c, 'exit 0'], timeout: 9}
          - done
        """,
    )
    assert read_script(path).kind == "oracle"
    where = f"{path}: steps"
    assert load_script(path) == [
        Click(3, 4, "right"),
        Key("ctrl+s"),
        WaitFor("no_window", "^Save", 5.0, f"{where}[2]", 1.0),
        Expect("smaller", f"{where}[3]"),
        Oracle(("/bin/true",), 300.0, f"{where}[4]"),
        Oracle(("sh", "-c", "exit 0"), 9.0, f"{where}[5]"),
        Done(),
    ]


def test_a_plain_list_and_jsonl_are_demonstrations(tmp_path: Path) -> None:
    listed = write(tmp_path, "- key: v\n- done\n")
    jsonl = write(tmp_path, '{"key": "v"}\n\n"done"\n', "ref.jsonl")
    for path in (listed, jsonl):
        assert read_script(path).kind == "demonstration"
        assert load_script(path) == [Key("v"), Done()]


def problems(path: Path) -> list[str]:
    with pytest.raises(AgentError) as info:
        load_script(path)
    return str(info.value).splitlines()


def test_unknown_keys_are_refused_naming_the_file_and_field(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        kind: demo
        author: me
        steps:
          - wait_for: {windw: '^GIMP'}
          - oracle: {argv: [/bin/true]}
          - expect: {message: x, timeout: 3}
          - done
        """,
    )
    unknown = "unknown key (not part of the reference script format)"
    assert problems(path) == [
        f"{path}:1: kind: Input should be 'demonstration' or 'oracle'",
        f"{path}:4: steps[0].wait_for.windw: {unknown}",
        f"{path}:5: steps[1].oracle.run: required field is missing",
        f"{path}:5: steps[1].oracle.argv: {unknown}",
        f"{path}:6: steps[2].expect.timeout: {unknown}",
        f"{path}:2: author: {unknown}",
    ]
    path = write(tmp_path, "- wait_for: {window: a, file: b}\n- done\n")
    assert problems(path) == [
        f"{path}:1: steps[0].wait_for: needs exactly one of window, no_window, file, anchor"
    ]


def test_bad_values_name_the_step_and_field(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        steps:
          - clik: [1, 2]
          - wait_for: {window: '(', timeout: true}
          - oracle: blender -b x.blend
          - oracle: {run: [a, 3]}
          - wait_for: nothing
          - done
        """,
    )
    assert problems(path) == [
        f"{path}:2: steps[0]: unknown action 'clik'; known: click, move, drag, scroll, type, "
        "key, wait, done, ask, fail",
        f"{path}:3: steps[1].wait_for.window: not a valid regex: missing ), unterminated "
        "subpattern at position 0",
        f"{path}:3: steps[1].wait_for.timeout: must be a positive number (seconds), got True",
        f"{path}:4: steps[2].oracle: needs an argv list of strings, never a shell string",
        f"{path}:5: steps[3].oracle.run[1]: Input should be a valid string",
        f"{path}:6: steps[4].wait_for: expected a mapping of fields, got str",
    ]


def test_a_script_needs_steps(tmp_path: Path) -> None:
    assert problems(write(tmp_path, "steps: []\n")) == [
        f"{tmp_path / 'ref.yaml'}:1: steps: List should have at least 1 item after validation, "
        "not 0"
    ]
    assert problems(write(tmp_path, "kind: oracle\n")) == [
        f"{tmp_path / 'ref.yaml'}:1: steps: required field is missing"
    ]
    (empty,) = problems(write(tmp_path, ""))
    assert "a script is a list of steps, or a mapping with 'steps'" in empty
    (syntax,) = problems(write(tmp_path, "steps: [done\n"))
    assert "ref.yaml: YAML syntax error (line 2, column 1)" in syntax
    with pytest.raises(AgentError, match=r"ref\.jsonl: line 2: invalid JSON"):
        load_script(write(tmp_path, '"done"\n{x\n', "ref.jsonl"))


def test_parse_script_names_the_source_it_is_given() -> None:
    with pytest.raises(AgentError) as info:
        parse_script([{"key": "v"}, {"wait_for": {"file": ""}}], "inline")
    assert str(info.value) == (
        "inline: steps[1].wait_for.file: String should have at least 1 character"
    )
