"""Task files: the shipped library loads; bad input names file, field and problem."""

from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

import pytest

from app.cli import main
from app.core.errors import TaskError
from app.core.triggers import AgentDone, AllOf, StepCount
from app.tasks.loader import find_task, load_task, load_tasks

ROOT = Path(__file__).resolve().parents[2]
GOOD = """\
id: demo-task
app: gimp
level: L1
title: Demo
instruction: Flip it.
setup:
  - upload: {src: assets/a.png, dest: ~/Desktop/a.png}
  - launch: [gimp, ~/Desktop/a.png]
  - wait_window: {class: Gimp, timeout: 30}
phases:
  - message: Make it smaller.
    trigger: {all: [agent_done, {step_count: 2}]}
evaluate:
  all:
    - {check: file_exists, path: ~/Desktop/out.png}
    - {check: image_similarity, path: ~/Desktop/out.png, reference: assets/a.png}
"""


def write_task(folder: Path, text: str, name: str = "demo-task.yaml") -> Path:
    (folder / "assets").mkdir(exist_ok=True)
    (folder / "assets" / "a.png").write_bytes(b"png")
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def problems_of(folder: Path, text: str) -> str:
    with pytest.raises(TaskError) as info:
        load_task(write_task(folder, text))
    return str(info.value)


def test_shipped_tasks_all_load() -> None:
    tasks, errors = load_tasks(ROOT / "tasks")
    assert errors == []
    assert {t.app for t in tasks} >= {"gimp"}
    interactive = [t for t in tasks if t.interactive]
    assert interactive, "the library ships at least one interactive task"


def test_good_task_parses_fields(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path, GOOD))
    assert task.id == "demo-task" and task.interactive
    assert task.phases[0].trigger == AllOf((AgentDone(), StepCount(2)))
    assert task.folder == tmp_path and len(task.sha256) == 64


# GOOD with a mistake, and what the error message names: each a test of its own.
MISTAKES = [
    pytest.param(
        GOOD.replace("title: Demo", "title: Demo\ncolour: red"),
        ["demo-task.yaml", "colour: unknown key"],
        id="unknown_key_names_file_and_field",
    ),
    pytest.param(
        GOOD.replace("{all: [agent_done, {step_count: 2}]}", "agent_dne"),
        ["phases[0].trigger", "agent_dne"],
        id="bad_trigger_names_phase_path",
    ),
    pytest.param(
        GOOD.replace("{step_count: 2}", "agent_ask"),
        ["phases[0].trigger", "never hold"],
        id="impossible_composition_rejected",
    ),
    pytest.param(
        GOOD.replace("reference: assets/a.png", "reference: assets/b.png"),
        ["evaluate.all[1].reference", "not found"],
        id="missing_asset_and_check_asset",
    ),
    pytest.param(
        GOOD.replace("- launch: [gimp, ~/Desktop/a.png]", "- run: ls"),
        ["setup[1]", "upload, launch, wait_window, sleep"],
        id="bad_setup_step",
    ),
    pytest.param(
        GOOD.replace("id: demo-task", "id: other-task"),
        ["must equal the file name"],
        id="id_must_match_file_name",
    ),
    pytest.param(
        GOOD + "  - [unclosed\n", ["YAML syntax error (line"], id="yaml_syntax_error_has_line"
    ),
    pytest.param(
        GOOD.replace("level: L1", "level: L9").replace("check: file_exists", "check: nope"),
        ["level", "evaluate.all[0]"],
        id="several_problems_reported_together",
    ),
    pytest.param(
        GOOD.replace("{class: Gimp, timeout: 30}", "{name: '([', timeout: 30}"),
        ["setup[2].wait_window.name", "not a regular expression"],
        id="a_window_pattern_that_cannot_compile_is_refused",
    ),
]


@pytest.mark.parametrize(("task_text", "named"), MISTAKES)
def test_a_mistake_is_named(tmp_path: Path, task_text: str, named: list[str]) -> None:
    text = problems_of(tmp_path, task_text)
    for fragment in named:
        assert fragment in text, text


@pytest.mark.parametrize("src", ["../secret.png", "/etc/passwd", "assets/../../x.png", "~/a.png"])
def test_asset_paths_cannot_escape(tmp_path: Path, src: str) -> None:
    text = problems_of(tmp_path, GOOD.replace("src: assets/a.png", f"src: {src}"))
    assert "setup[0].upload.src" in text


def test_symlinked_asset_escaping_folder_rejected(tmp_path: Path) -> None:
    task_dir = tmp_path / "t"
    task_dir.mkdir()
    outside = tmp_path / "outside.png"
    outside.write_bytes(b"x")
    path = write_task(task_dir, GOOD.replace("src: assets/a.png", "src: assets/link.png"))
    (task_dir / "assets" / "link.png").symlink_to(outside)
    with pytest.raises(TaskError, match=r"setup\[0\]\.upload\.src.*escapes"):
        load_task(path)


def test_unknown_check_suggests(tmp_path: Path) -> None:
    text = problems_of(tmp_path, GOOD.replace("check: file_exists", "check: file_exist"))
    assert "evaluate.all[0]" in text and "file_exists" in text
    # The field is named once, as docs/tasks.md shows it (it was printed twice).
    assert text.count("evaluate.all[0].check") == 1, text


def test_launch_must_be_argv_list(tmp_path: Path) -> None:
    text = problems_of(tmp_path, GOOD.replace("[gimp, ~/Desktop/a.png]", "gimp ~/Desktop/a.png"))
    assert "setup[1].launch.launch" in text or "setup[1].launch" in text


def test_find_task_did_you_mean(tmp_path: Path) -> None:
    app_dir = tmp_path / "gimp"
    app_dir.mkdir()
    write_task(app_dir, GOOD)
    assert find_task("demo-task", [tmp_path]).id == "demo-task"
    with pytest.raises(TaskError, match="did you mean demo-task"):
        find_task("demo-tsk", [tmp_path])


def test_cli_validate_reports_and_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(ROOT / "tasks" / "gimp", tmp_path / "gimp")
    bad = tmp_path / "gimp" / "gimp-flip-export.yaml"
    bad.write_text(bad.read_text().replace("src: assets/photo.png", "src: ../photo.png"))
    code = main(["tasks", "validate", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1
    assert "INVALID" in out and "gimp-flip-export.yaml:9: setup[0].upload.src" in out
    total = len(list((tmp_path / "gimp").glob("*.yaml")))
    assert f"{total - 1} valid, 1 invalid" in out


def test_phase_check_assets_are_validated_at_load(tmp_path: Path) -> None:
    text = GOOD.replace(
        "    trigger: {all: [agent_done, {step_count: 2}]}",
        "    trigger: {all: [agent_done, {step_count: 2}]}\n"
        "    checks: {check: image_similarity, path: ~/Desktop/out.png, reference: assets/zz.png}",
    )
    problems = problems_of(tmp_path, text)
    assert "phases[0].checks.reference" in problems and "not found" in problems


@pytest.mark.parametrize("budget", ["{steps: true}", "{steps: '10'}", "{seconds: '30'}"])
def test_budget_numbers_are_numbers(tmp_path: Path, budget: str) -> None:
    text = problems_of(tmp_path, GOOD + f"budget: {budget}\n")
    assert "budget." in text and "valid" in text, text


def test_a_whole_number_of_seconds_is_a_number(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path, GOOD + "budget: {steps: 10, seconds: 30}\n"))
    assert (task.budget.steps, task.budget.seconds) == (10, 30.0)


def test_validating_an_empty_library_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tasks", "validate", str(tmp_path)]) == 1
    assert f"no task files in {tmp_path}" in capsys.readouterr().err


def test_one_id_in_two_files_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app_dir = tmp_path / "gimp"
    app_dir.mkdir()
    first = write_task(app_dir, GOOD)
    second = write_task(app_dir, GOOD, name="demo-task.yml")
    assert main(["tasks", "validate", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"{first}:1: id: task id 'demo-task' is also claimed by {second}" in out
    assert "0 valid, 2 invalid" in out
    with pytest.raises(TaskError, match="claimed by more than one file"):
        find_task("demo-task", [tmp_path])


def test_a_fifo_named_as_a_task_is_listed_and_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app_dir = tmp_path / "gimp"
    app_dir.mkdir()
    write_task(app_dir, GOOD)
    os.mkfifo(app_dir / "stuck.yaml")
    assert main(["tasks", "validate", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "stuck.yaml: cannot read task file: not a regular file" in out
    assert "1 valid, 1 invalid" in out


def test_a_setup_step_error_names_its_field_once(tmp_path: Path) -> None:
    text = problems_of(tmp_path, GOOD.replace("dest: ~/Desktop/a.png}", "dest: ~/a.png, mode: 1}"))
    assert "setup[0].upload.mode: unknown key" in text and "upload.upload" not in text


@pytest.mark.parametrize(
    ("dest", "why"),
    [
        ("/etc/x", "under the desktop's home"),
        ("~/../../etc/x", "must not contain '..'"),
        ("~/Desktop/../../x", "must not contain '..'"),
        ("a.png", "under the desktop's home"),
    ],
)
def test_an_upload_outside_the_home_is_refused_when_validating(
    tmp_path: Path, dest: str, why: str
) -> None:
    text = problems_of(tmp_path, GOOD.replace("dest: ~/Desktop/a.png", f"dest: '{dest}'"))
    assert "setup[0].upload.dest" in text and why in text, text


def test_validate_reads_the_reference_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(ROOT / "tasks" / "gimp", tmp_path / "gimp")
    reference = tmp_path / "gimp" / "references" / "gimp-flip-export.yaml"
    reference.write_text(reference.read_text().replace("- key: alt+i", "- kee: alt+i"))
    assert main(["tasks", "validate", str(tmp_path / "gimp" / "gimp-flip-export.yaml")]) == 1
    out = capsys.readouterr().out
    assert "INVALID" in out and f"{reference}:6: steps[1]" in out, out


def test_tasks_sharing_assets_each_report_their_own_missing_ones(tmp_path: Path) -> None:
    # load_tasks looks each found asset up once for the whole library; a missing one is
    # reported by every task that names it, each with its own field and line.
    write_task(tmp_path, GOOD)
    second = GOOD.replace("id: demo-task", "id: demo-two").replace(
        "reference: assets/a.png", "reference: assets/gone.png"
    )
    third = second.replace("id: demo-two", "id: demo-three")
    write_task(tmp_path, second, "demo-two.yaml")
    write_task(tmp_path, third, "demo-three.yaml")
    tasks, errors = load_tasks(tmp_path)
    assert [t.id for t in tasks] == ["demo-task"]
    assert sorted(str(e).split(":")[0] for e in errors) == [
        str(tmp_path / "demo-three.yaml"),
        str(tmp_path / "demo-two.yaml"),
    ]
    for error in errors:
        assert "evaluate.all[1].reference: asset 'assets/gone.png' not found" in str(error)
