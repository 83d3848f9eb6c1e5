"""The hostile task corpus (tests/hostile_tasks/): every case is refused by
`deskloop tasks validate`, naming the file, the line and the field, on one line, with
no traceback, within a second; the whole corpus at once lists every bad file.

Each case file starts with ``# expect: FIELD | WORDS``: the field its problem names
(``-`` for a file the reader refuses before any field: an alias, a duplicate key, bytes
that are not UTF-8...) and words the problem says. ``# in: PATH`` names the file the
problem is in when it is not the case itself (a broken reference script), and
``# with: PATH`` a file validated together with it (an id claimed twice). What cannot
be committed (a FIFO, a file over the size limit) is made here, at test time.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.cli import main
from app.core.validation import MAX_YAML_BYTES

CORPUS = Path(__file__).parents[1] / "hostile_tasks"
ROOT = Path(__file__).parents[2]


@dataclass(frozen=True)
class Case:
    path: Path
    field: str
    words: str
    problem_in: Path
    together: tuple[Path, ...]

    @property
    def name(self) -> str:
        return f"{self.path.parent.name}/{self.path.name}"


def _cases() -> list[Case]:
    cases = []
    for path in sorted(p for p in CORPUS.glob("*/*") if p.suffix in (".yaml", ".yml")):
        head = path.read_bytes().split(b"\n")[:4]
        tags = {}
        for line in head:
            match = re.match(rb"# (expect|in|with): (.*)$", line)
            if match:
                tags[match[1].decode()] = match[2].decode()
        assert "expect" in tags, f"{path}: a case starts with '# expect: FIELD | WORDS'"
        field, words = (part.strip() for part in tags["expect"].split("|", 1))
        problem_in = path.parent / tags["in"] if "in" in tags else path
        together = (path.parent / tags["with"],) if "with" in tags else ()
        cases.append(Case(path, field, words, problem_in, together))
    return cases


CASES = _cases()


def validate(capsys: pytest.CaptureFixture[str], *paths: Path) -> tuple[int, str, float]:
    start = time.perf_counter()
    code = main(["tasks", "validate", *map(str, paths)])
    elapsed = time.perf_counter() - start
    captured = capsys.readouterr()
    return code, captured.out + captured.err, elapsed


@pytest.fixture(scope="module", autouse=True)
def _imports_loaded() -> None:
    # The first validation imports every check module; the 1 s bound is per case.
    main(["tasks", "validate", str(ROOT / "tasks" / "gimp" / "gimp-flip-export.yaml")])


def test_the_corpus_has_a_case_for_each_kind_of_hostile_file() -> None:
    assert len(CASES) >= 110
    fields = {case.field.split("[")[0].split(".")[0] for case in CASES}
    for field in ("-", "id", "app", "level", "title", "instruction", "setup", "phases"):
        assert field in fields
    for field in ("budget", "evaluate", "reference", "steps"):
        assert field in fields
    # The cases that need a folder of their own are real pairs.
    assert all(other.exists() for case in CASES for other in case.together)


def problem_lines(output: str) -> list[str]:
    return [line[2:] for line in output.splitlines() if line.startswith("  ")]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_each_case_is_refused_naming_file_line_and_field(
    case: Case, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, elapsed = validate(capsys, case.path, *case.together)
    assert code == 1, out
    assert f"INVALID  {case.path}" in out, out
    assert "Traceback" not in out and "internal error" not in out, out
    # Refused, not worked through: an alias bomb or a huge file expanded would take
    # minutes. The bound is far above a refusal (milliseconds on an idle machine) so a
    # loaded machine does not fail it; how fast validation is, bench/ measures.
    assert elapsed < 20.0, f"{elapsed:.2f} s"
    where = re.escape(str(case.problem_in))
    if case.field == "-":
        # Refused by the reader: no field yet, the line where it has one.
        pattern = rf"^{where}: "
    else:
        pattern = rf"^{where}:(?P<line>\d+): {re.escape(case.field)}[:.\[]"
    named = [
        line
        for line in problem_lines(out)
        if re.match(pattern, line.removeprefix(f"{ROOT}/")) or re.match(pattern, line)
    ]
    assert named, f"no problem names {case.field!r} in {case.problem_in}:\n{out}"
    assert any(case.words in line for line in named), out
    if case.field != "-" and case.problem_in == case.path:
        _points_at_the_field(case, named)


def _points_at_the_field(case: Case, named: list[str]) -> None:
    """The line number is the field's own line: the line holds the field's key (a
    missing field is reported at its mapping, an item of a list by its index)."""
    key = case.field.rsplit(".", 1)[-1]
    missing = "required" in case.words or "needs this parameter" in case.words
    if key.endswith("]") or missing or key == "None":
        return
    match = re.match(r"^.*?:(\d+): ", named[0])
    assert match, named[0]
    text = case.path.read_text(encoding="utf-8").splitlines()[int(match[1]) - 1]
    assert key in text, f"line {match[1]} is {text!r}, not the line of {case.field}"


def test_every_problem_is_one_line_naming_its_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, elapsed = validate(capsys, CORPUS)
    assert code == 1
    assert elapsed < 5.0, f"{elapsed:.2f} s"
    # One bad file never stops the rest from being listed: every case is there.
    listed = set(re.findall(r"^INVALID  (\S+)$", out, re.MULTILINE))
    assert {str(case.path) for case in CASES} <= listed
    assert f"0 valid, {len(CASES)} invalid" in out
    for line in problem_lines(out):
        assert line.startswith(str(CORPUS)), line


@pytest.mark.timeout(30)
def test_what_cannot_be_committed_is_refused_with_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app_dir = tmp_path / "gimp"
    app_dir.mkdir()
    os.mkfifo(app_dir / "a-fifo.yaml")  # no writer will come: reading it would block
    (app_dir / "too-large.yaml").write_text("# " + "x" * MAX_YAML_BYTES + "\n")
    (app_dir / "zero-bytes.yaml").write_bytes(b"")
    (app_dir / "a-device.yaml").symlink_to("/dev/zero")
    (app_dir / "dangling.yaml").symlink_to(tmp_path / "nowhere.yaml")
    (app_dir / "a-folder.yaml").mkdir()
    code, out, elapsed = validate(capsys, app_dir, CORPUS)
    assert code == 1 and "Traceback" not in out
    assert elapsed < 5.0
    expected = {
        "a-fifo.yaml": "not a regular file",
        "too-large.yaml": f"the limit is {MAX_YAML_BYTES}",
        "zero-bytes.yaml": "the file is empty",
        "a-device.yaml": "not a regular file",
        "dangling.yaml": "cannot read task file",
    }
    for name, words in expected.items():
        path = app_dir / name
        assert f"INVALID  {path}" in out
        assert any(line.startswith(f"{path}: ") and words in line for line in problem_lines(out))
    # A folder named like a task is not a task; the corpus is still listed in full.
    assert f"{app_dir / 'a-folder.yaml'}" not in out
    assert f"0 valid, {len(CASES) + len(expected)} invalid" in out


def test_the_real_command_exits_1_without_a_traceback() -> None:
    picked = [c.path for c in CASES if c.path.stem in ("alias-bomb", "deep-any-trigger-250")]
    picked += [c.path for c in CASES if c.path.stem in ("nul-byte", "python-object-tag")]
    assert len(picked) == 4
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "tasks", "validate", *map(str, picked)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert done.stdout.count("INVALID  ") == 4
    assert "0 valid, 4 invalid" in done.stdout
