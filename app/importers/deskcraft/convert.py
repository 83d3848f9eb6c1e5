"""Convert DeskCraft task files (OSWorld-style JSON) into DeskLoop task folders.

What maps, and how (docs/tasks.md, "Importing DeskCraft tasks", says it for people):

- `config`: `upload_file` and `download` become `upload` steps, their files copied from
  a local copy of DeskCraft's repository into the task's `assets/` (a download's file is
  looked up there by its name; a file that is not there is named as missing); `launch`
  becomes `launch` followed by a `wait_window` for the app's window, which replaces the
  fixed `sleep` after it; any other step is a named manual step.
- `phases` (interactive tasks): DeskCraft's phase k carries its own instruction and the
  trigger that *ends* it, i.e. that delivers phase k+1. DeskLoop's phase carries the
  trigger that *delivers* it. So phase 1's instruction becomes the task's instruction,
  and phase k+1's message gets phase k's trigger (`agent_done`, `step_count: N` →
  `{step_count: N}`, `agent_asks` → `agent_ask`); the last phase's trigger delivers
  nothing. `agent_idle` and `llm_judge` have no DeskLoop trigger: manual steps.
- `evaluator`: see app/importers/deskcraft/checks.py.

A file is *imported* when everything mapped, *imported with manual steps* when a task
was written but something named needs a person (the task file lists them in a comment
at its top), and *not importable* when no task could be written (another app, no
evaluator that maps), with the reason.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from app.core.errors import TaskError
from app.importers.deskcraft.blender import blend_problem
from app.importers.deskcraft.checks import Unmapped, guest_path, map_evaluator
from app.importers.deskcraft.gimp import has_icc_profile
from app.tasks.loader import MANUAL_MARK, load_task

APPS = ("gimp", "blender", "kdenlive")
LAUNCH: dict[str, list[str]] = {
    # Blender under Xvnc draws with Mesa's software OpenGL (as the library's tasks do).
    "blender": ["env", "LIBGL_ALWAYS_SOFTWARE=1", "blender", "--factory-startup"],
    "gimp": ["gimp", "-n", "--no-splash"],
    "kdenlive": ["kdenlive"],
}
WAIT: dict[str, dict[str, Any]] = {
    "blender": {"name": r"^Blender \[", "timeout": 120},
    "gimp": {"class": "Gimp", "timeout": 90},
    "kdenlive": {"class": "kdenlive", "timeout": 90},
}
MAX_SLEEP = 120.0
Status = Literal["imported", "manual", "not importable"]


@dataclass
class ImportReport:
    """What happened to one DeskCraft file."""

    source: Path
    status: Status
    task_id: str | None = None
    written: Path | None = None
    manual: list[str] = field(default_factory=list)
    """Named steps a person must still do (a missing asset, an unmapped evaluator)."""
    reason: str | None = None
    """Why the file is not importable."""

    def line(self) -> str:
        """The report's line for people."""
        if self.status == "not importable":
            return f"not importable  {self.source}: {self.reason}"
        head = "imported" if self.status == "imported" else "imported, manual steps left"
        lines = [f"{head}  {self.source} -> {self.written}"]
        lines += [f"  manual: {step}" for step in self.manual]
        return "\n".join(lines)


class _NoAliases(yaml.SafeDumper):
    """Writes a value shared by two nodes out twice: task files refuse YAML aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def task_yaml(task: dict[str, Any]) -> str:
    """The task as YAML, in field order, without anchors or aliases."""
    return yaml.dump(task, Dumper=_NoAliases, sort_keys=False, allow_unicode=True, width=100)


class NotImportable(Exception):
    """The file cannot become a DeskLoop task; the message says why."""


def task_id(raw_id: str, app: str) -> str:
    """A DeskLoop id for a DeskCraft id: a UUID keeps its first group
    (`deskcraft-blender-0fbdd695`), other ids become lowercase words with dashes."""
    # A UUID, possibly with a suffix ('a1b00003-0003-4000-8000-000000000003-L1').
    uuid = re.match(
        r"([0-9a-fA-F]{8})-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", raw_id
    )
    tail = uuid.group(1).lower() if uuid else raw_id.lower()
    tail = re.sub(r"[^a-z0-9]+", "-", tail).strip("-")
    tail = re.sub(rf"^(interactive-)?{app}-", "", tail)
    return f"deskcraft-{app}-{tail}"


def _app(raw: dict[str, Any]) -> str:
    apps = raw.get("related_apps")
    names = [raw.get("snapshot"), *(apps if isinstance(apps, list) else [])]
    found = [a for a in APPS if a in names]
    if len(set(found)) != 1:
        raise NotImportable(f"app {names!r} is not one of {', '.join(APPS)}")
    return found[0]


def _home_paths(text: str) -> str:
    """DeskCraft's user is /home/user; a DeskLoop desktop's home is elsewhere, so the
    words the agent reads name paths from `~/`, as the library's tasks do."""
    return re.sub(r"/home/user(?=/|\b)", "~", text)


def _title(text: str) -> str:
    # A sentence ends at . ! ? before a space or the end ('scene.blend' does not end one).
    sentences = [x for x in re.split(r"(?<=[.!?])\s+|(?<=[。！？])", text.strip()) if x]
    # DeskCraft's instructions often begin "Open the project X."; the task is what follows.
    doing = [x for x in sentences if not x.lower().startswith("open ")]
    first = (doing or sentences or [text.strip()])[0]
    return first if len(first) <= 80 else first[:79].rstrip() + "…"


@dataclass
class _Conversion:
    repo: Path
    folder: Path
    app: str
    manual: list[str]
    media: Path | None = None
    """A folder of substitutes for files the repository copy lacks (its unpublished
    Git LFS objects), laid out like its assets/ folder or found by file name."""
    notes: list[str] = field(default_factory=list)
    """What the task file's header says besides its manual steps (substitutes used)."""
    assets: dict[str, Path] = field(default_factory=dict)
    """Asset name in the task folder → the file in the repository copy."""

    def asset(self, local: str | None, url: str | None) -> str | None:
        """The task-folder path for a DeskCraft file, or None (named as missing)."""
        source: Path | None = None
        if local:
            candidate = (self.repo / local).resolve()
            if candidate.is_relative_to(self.repo.resolve()) and candidate.is_file():
                source = candidate
        elif url:
            name = url.rstrip("/").rsplit("/", 1)[-1]
            root = self.repo.resolve()
            matches = sorted(
                p.resolve()
                for p in self.repo.rglob(name)
                if p.is_file() and ".git" not in p.parts and p.resolve().is_relative_to(root)
            )
            source = matches[0] if matches else None
        wanted = local or url or "?"
        if source is None:
            found = self._substitute(wanted)
            if found is None:
                self.manual.append(f"asset {wanted} is not in {self.repo}: provide it")
                return None
            source, relative = found
            self.notes.append(f"asset {wanted} is not in {self.repo}: substitute {source}")
        else:
            relative = source.relative_to(self.repo.resolve()).as_posix()
        # Every task of an app shares its assets/ folder: keep the repository's own path
        # under it, so two DeskCraft files of one name never overwrite each other.
        name = "assets/deskcraft/" + relative.removeprefix("assets/")
        self.assets[name] = source
        if source.suffix == ".blend":
            problem = blend_problem(source)
            if problem:
                self.manual.append(f"asset {wanted}: {problem}")
        return name

    def _substitute(self, wanted: str) -> tuple[Path, str] | None:
        """A file for `wanted` in --media: at its repository path less `assets/`
        (`glb/model.glb`), else the first of its file name anywhere under --media; with
        the repository-style path it is stored under."""
        if self.media is None:
            return None
        root = self.media.resolve()
        name = wanted.rstrip("/").rsplit("/", 1)[-1]
        rest = wanted.removeprefix("assets/") if "://" not in wanted else name
        direct = (root / rest).resolve()
        if direct.is_relative_to(root) and direct.is_file():
            return direct, "assets/" + rest
        matches = sorted(p.resolve() for p in root.rglob(name) if p.is_file())
        matches = [p for p in matches if p.is_relative_to(root)]
        if not matches:
            return None
        return matches[0], "assets/" + matches[0].relative_to(root).as_posix()

    def setup(self, config: Any) -> list[Any]:
        steps: list[Any] = []
        if not isinstance(config, list):
            return steps
        launched = False
        uploaded: dict[str, Path] = {}
        for index, item in enumerate(config):
            kind = item.get("type") if isinstance(item, dict) else None
            params = item.get("parameters", {}) if isinstance(item, dict) else {}
            if kind in ("upload_file", "download"):
                for entry in params.get("files", []):
                    dest = guest_path(str(entry.get("path", "")))
                    if dest.startswith("/tmp/") and str(entry.get("local_path", "")).endswith(
                        ".py"
                    ):
                        continue  # DeskCraft's own checker script; DeskLoop's probes replace it
                    if not dest.startswith("~/"):
                        self.manual.append(f"config[{index}]: {dest} is outside the home")
                        continue
                    src = self.asset(entry.get("local_path"), entry.get("url"))
                    if src is not None:
                        steps.append({"upload": {"src": src, "dest": dest}})
                        uploaded[dest] = self.assets[src]
            elif kind == "launch":
                command = params.get("command")
                argv = command if isinstance(command, list) else str(command).split()
                program = argv[0].rsplit("/", 1)[-1] if argv else ""
                if program != self.app:
                    self.manual.append(f"config[{index}]: launch {argv!r} is not {self.app}")
                    continue
                opened = [guest_path(a) for a in argv[1:]]
                if self.app == "gimp":
                    self.manual.extend(
                        f"config[{index}]: GIMP opens {dest} at launch, and it has an ICC "
                        "profile: GIMP asks whether to convert it before showing the image, "
                        "so the window the setup waits for never comes; strip the profile"
                        for dest in opened
                        if dest in uploaded and has_icc_profile(uploaded[dest])
                    )
                steps.append({"launch": [*LAUNCH[self.app], *opened]})
                steps.append({"wait_window": dict(WAIT[self.app])})
                launched = True
            elif kind == "sleep":
                seconds = float(params.get("seconds", 0))
                # The wait_window after a launch waits on the window itself.
                if not launched and 0 < seconds <= MAX_SLEEP:
                    steps.append({"sleep": seconds})
                launched = False
            else:
                self.manual.append(
                    f"config[{index}]: step type {kind!r} has no DeskLoop setup step"
                )
        return steps

    def evaluate(self, evaluator: Any) -> dict[str, Any]:
        if not isinstance(evaluator, dict):
            raise NotImportable("it has no evaluator")
        raw_funcs = evaluator.get("func")
        funcs: list[Any] = raw_funcs if isinstance(raw_funcs, list) else [raw_funcs]
        results = evaluator.get("result")
        expected = evaluator.get("expected")
        results = results if isinstance(results, list) else [results] * len(funcs)
        expected = expected if isinstance(expected, list) else [expected] * len(funcs)
        leaves: list[Any] = []
        unmapped: list[str] = []
        for func, result, rules in zip(funcs, results, expected, strict=False):
            try:
                leaves.extend(map_evaluator(str(func), result, rules))
            except Unmapped as exc:
                unmapped.append(str(exc))
        if not leaves:
            raise NotImportable("; ".join(unmapped) or "its evaluator is empty")
        self.manual += [f"{u}: write its check by hand" for u in unmapped]
        post = evaluator.get("postconfig")
        if isinstance(post, list) and post:
            kinds = ", ".join(str(p.get("type")) if isinstance(p, dict) else "?" for p in post)
            # DeskCraft acts for the agent before scoring (exports with ctrl+shift+e, quits
            # GIMP so gimprc is written); DeskLoop scores the desktop as the agent left it.
            self.manual.append(
                f"evaluator postconfig ({kinds}) is not run: DeskLoop scores the desktop as "
                "the agent left it; say in the instruction what the agent must do instead"
            )
        conj = "any" if evaluator.get("conj") == "or" else "all"
        if conj == "any" and unmapped:
            # An 'or' with a part left out would pass more easily than DeskCraft's.
            raise NotImportable(f"an 'or' of evaluators where some do not map: {unmapped[0]}")
        return {conj: leaves}


_TRIGGERS = {"agent_done": "agent_done", "agent_asks": "agent_ask"}


def _trigger(raw: Any, where: str, manual: list[str]) -> Any:
    kind = raw.get("type") if isinstance(raw, dict) else None
    if kind in _TRIGGERS:
        return _TRIGGERS[kind]
    if kind == "step_count" and isinstance(raw.get("value"), int) and raw["value"] > 0:
        return {"step_count": raw["value"]}
    manual.append(f"{where}: trigger {raw!r} has no DeskLoop trigger; agent_done put in its place")
    return "agent_done"


def _phases(raw: list[Any], manual: list[str]) -> tuple[str, list[dict[str, Any]]]:
    ordered = sorted(raw, key=lambda p: p.get("phase_id", 0) if isinstance(p, dict) else 0)
    texts = [_home_paths(str(p.get("instruction", "")).strip()) for p in ordered]
    if not ordered or not all(texts):
        raise NotImportable("a phase has no instruction")
    phases = []
    for k in range(1, len(ordered)):
        # DeskCraft's phase k trigger ends phase k, so it is what delivers phase k+1.
        trigger = _trigger(ordered[k - 1].get("trigger"), f"phases[{k - 1}]", manual)
        phases.append({"message": texts[k], "trigger": trigger})
    return texts[0], phases


def convert(
    source: Path,
    repo: Path,
    out: Path,
    taken: dict[str, Path] | None = None,
    media: Path | None = None,
) -> ImportReport:
    """Convert one DeskCraft file into `out/<app>/<id>.yaml` (+ its assets).

    `taken`: the ids already written in this import, with their source files; a second
    file of the same id is not importable rather than written over the first.
    `media`: substitutes for files `repo` lacks (see `_Conversion.media`).
    """
    try:
        raw = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return ImportReport(source, "not importable", reason=f"not a readable JSON file ({exc})")
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
        return ImportReport(source, "not importable", reason="not a DeskCraft task (no id)")
    manual: list[str] = []
    try:
        app = _app(raw)
        ident = task_id(raw["id"], app)
        folder = out / app
        work = _Conversion(repo, folder, app, manual, media)
        if raw.get("phases"):
            instruction, phases = _phases(raw["phases"], manual)
        elif isinstance(raw.get("instruction"), str) and raw["instruction"].strip():
            instruction, phases = _home_paths(raw["instruction"].strip()), []
        else:
            raise NotImportable("it has neither an instruction nor phases")
        level = raw.get("difficulty")
        if level not in ("L1", "L2", "L3"):
            # DeskCraft's file names start with the level: L2_gimp_….json
            named = re.match(r"(L[123])_", source.name)
            level = named.group(1) if named else None
        if level not in ("L1", "L2", "L3"):
            level = "L3" if phases else "L2"
            manual.append(f"level: DeskCraft gives none; {level} assumed, check it")
        setup = work.setup(raw.get("config"))
        evaluate = work.evaluate(raw.get("evaluator"))
    except NotImportable as exc:
        return ImportReport(source, "not importable", reason=str(exc))
    task: dict[str, Any] = {
        "id": ident,
        "app": app,
        "level": level,
        "title": _title(instruction),
        "instruction": instruction,
        "setup": setup,
    }
    if phases:
        task["phases"] = phases
    task["budget"] = {"steps": 50 if level == "L1" else 100 if level == "L2" else 200}
    task["evaluate"] = evaluate
    if taken is not None and ident in taken:
        return ImportReport(
            source, "not importable", reason=f"id {ident} is already taken by {taken[ident]}"
        )
    path = folder / f"{ident}.yaml"
    header = [f"# Imported from DeskCraft {source.name} (id {raw['id']})."]
    header += [f"# NOTE: {note}" for note in work.notes]
    header += [f"{MANUAL_MARK} {step}" for step in manual]
    folder.mkdir(parents=True, exist_ok=True)
    for name, file in work.assets.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, target)
    text = task_yaml(task)
    path.write_text("\n".join(header) + "\n" + text, encoding="utf-8")
    try:
        load_task(path)
    except TaskError as exc:
        path.unlink()
        return ImportReport(
            source, "not importable", reason=f"the converted task is invalid: {exc}"
        )
    if taken is not None:
        taken[ident] = source
    status: Status = "manual" if manual else "imported"
    return ImportReport(source, status, task_id=ident, written=path, manual=manual)
