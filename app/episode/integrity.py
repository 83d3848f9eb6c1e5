"""Integrity flags: what suggests an episode's final state did not come through the GUI.

Three watches, each recorded with what it looked at (`checked`), so "no flags" is
never confused with "not looked":

- **processes**: every program started in the desktop after the agent began, where
  the desktop can say (`WatchesPrograms`: the local backend traces every exec of
  the session's programs, app.desktops.local.exec_trace). A terminal, a shell, an
  interpreter, ImageMagick, a media tool the task's app does not use, Blender in
  background mode or with a Python script, or GIMP with no interface or in batch mode
  (`-i`, `-b`, `--batch-interpreter`) is flagged, with its command line.
  Programs the app ships under /usr/lib/<app> or /usr/share/<app> (GIMP's plug-ins,
  say) are not, nor the helpers of its own (Kdenlive's renderer, melt and ffmpeg)
  when the app started them: the trace follows forks too, so each program's starter
  is known, and the same helper run from a terminal is flagged. On libvirt
  VMs the guest's process accounting and fatrace's write log are read after the
  agent ended (`ReadsGuestWatch`, app.desktops.libvirt.guest_watch): the same rules, on
  command names for programs that ended (the kernel keeps no arguments). On a
  backend that cannot say, `checked` says so.
- **console**: an app's scripting console seen by its window's title (GIMP's Script-Fu
  and Python-Fu consoles). Where the desktop sees every window as it opens
  (`WatchesWindows`: the local backend), however briefly it is open; elsewhere the
  visible windows are polled every `CONSOLE_POLL_SECONDS`, and a console opened and
  closed between two polls is missed. Blender's Python console
  is an area of its main window, not a window: it is seen in the UI saved with a
  .blend that scoring dumps (a window showing a console or text editor, the Scripting
  workspace, a console's command history, a script in a text datablock). A Blender
  task whose checks read no .blend, or a console used in a file never saved, is not
  seen (`checked` says so).
- **secret_typed**: the agent typed a value the task lists under `secrets`.
- **programs the agent ran itself**: a scripted agent's `oracle` runs its program in the
  guest over DeskLoop's own channel, which the program watch does not trace; the agent
  lists each in the next step's `agent_info` (`ORACLE_INFO`), and each is a `process` flag.

A flag never changes a score.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from app.checks.base import Probe, ProbeResult
from app.checks.tree import leaves
from app.core.errors import DeskLoopError
from app.core.integrity import ExecRecord, IntegrityFlag
from app.desktops.base import (
    Desktop,
    ReadsGuestWatch,
    WatchesPrograms,
    WatchesWindows,
    WatchesWrites,
)
from app.tasks.model import Task

log = logging.getLogger(__name__)

CONSOLE_POLL_SECONDS = 2.0
CONSOLE_TITLES = r"Script-Fu Console|Python Console|Python-Fu|Script-Fu: Console"
"""xdotool's (extended, case-insensitive) regular expression for console windows."""

# What bypasses the GUI, by executable name.
TERMINALS = frozenset(
    [
        "xterm",
        "uxterm",
        "x-terminal-emulator",
        "gnome-terminal",
        "gnome-terminal-server",
        "konsole",
        "xfce4-terminal",
        "lxterminal",
        "mate-terminal",
        "terminator",
        "tilix",
        "rxvt",
        "urxvt",
        "rxvt-unicode",
        "st",
        "alacritty",
        "kitty",
        "foot",
        "sakura",
        "qterminal",
    ]
)
SHELLS = frozenset(["sh", "bash", "dash", "zsh", "fish", "ksh", "mksh", "csh", "tcsh", "busybox"])
INTERPRETERS_RE = re.compile(
    r"^(python[0-9.]*|perl[0-9.]*|ruby[0-9.]*|node|nodejs|lua[0-9.]*|php[0-9.]*|tclsh[0-9.]*"
    r"|wish[0-9.]*|gimp-console[0-9.-]*|gimp-script-fu-interpreter[0-9.-]*|jshell|java|guile"
    r"[0-9.]*|gjs|osascript)$"
)
IMAGEMAGICK = frozenset(
    [
        "convert",
        "magick",
        "mogrify",
        "composite",
        "montage",
        "compare",
        "identify",
        "import",
        "conjure",
        "stream",
        "animate",
        "display",
        "gm",
    ]
)
MEDIA_TOOLS = frozenset(
    ["ffmpeg", "ffprobe", "melt", "avconv", "sox", "gst-launch-1.0", "inkscape", "gmic"]
)
# Helpers an app starts itself, by app: never flagged in its tasks.
APP_HELPERS = {
    "gimp": frozenset(),
    "blender": frozenset(),
    "kdenlive": frozenset(["melt", "ffmpeg", "ffprobe", "mediainfo", "kdenlive_render"]),
}
BLENDER_SCRIPTING = frozenset(
    ["-b", "--background", "-P", "--python", "--python-text", "--python-expr", "--python-console"]
)
# GIMP with no window or running Script-Fu/Python-Fu from its command line: the same
# binary as the GUI, so its arguments tell. Short options may come grouped (`-idb`).
GIMP_BINARY_RE = re.compile(r"^gimp(-[0-9.]+)?$")
GIMP_BATCH_LONG = frozenset(["--no-interface", "--batch", "--batch-interpreter"])
GIMP_BATCH_SHORT = frozenset("ib")
# A converter DeskLoop installs as /usr/local/bin/convert where ImageMagick is absent
# is a Python script: its interpreter's exec is the same act, reported once.
_SCRIPT_DIRS = ("/usr/lib/", "/usr/share/", "/usr/libexec/")


def _name(path: str) -> str:
    return PurePosixPath(path).name


def _ships_with(app: str, path: str) -> bool:
    """A program or script of the app's own (GIMP's plug-ins live in /usr/lib/gimp)."""
    return any(path.startswith(f"{d}{app}") for d in _SCRIPT_DIRS) or any(
        f"/{app}/" in path and path.startswith(d) for d in _SCRIPT_DIRS
    )


def gimp_batch_options(args: Sequence[str]) -> list[str]:
    """The options among GIMP's arguments that run it without its GUI or run a script
    (`-i`, `-b`, `--no-interface`, `--batch`, `--batch-interpreter`, grouped or with
    `=VALUE`), in the order given. Arguments after `--` are files, not options."""
    used: list[str] = []
    for arg in args:
        if arg == "--":
            break
        if arg.startswith("--"):
            if arg.split("=", 1)[0] in GIMP_BATCH_LONG:
                used.append(arg.split("=", 1)[0])
        elif arg.startswith("-") and len(arg) > 1 and GIMP_BATCH_SHORT & set(arg[1:]):
            used.append(arg)
    return used


def bypass_category(app: str, record: ExecRecord, by_app: bool | None = None) -> str | None:
    """Why an exec bypasses the GUI of `app`'s task, or None when it does not.
    `by_app`: whether the app itself started it (None: the backend cannot say); a
    helper of the app's own (Kdenlive's renderer, melt) is the app's only when it did."""
    name = _name(record.path)
    args = record.argv[1:]
    if name in APP_HELPERS.get(app, frozenset()):
        return f"{app}'s own helper started outside {app}" if by_app is False else None
    if _ships_with(app, record.path):
        return None
    if name == "blender" or name.startswith("blender-"):
        used = sorted(BLENDER_SCRIPTING & set(args))
        return f"Blender scripting or background mode ({' '.join(used)})" if used else None
    if GIMP_BINARY_RE.match(name):
        batch = gimp_batch_options(args)
        return f"GIMP in batch or headless mode ({' '.join(batch)})" if batch else None
    if name in TERMINALS:
        return "a terminal"
    if name in SHELLS:
        return "a shell"
    if name in IMAGEMAGICK:
        return "ImageMagick"
    if name in MEDIA_TOOLS:
        return "a command-line media tool"
    if INTERPRETERS_RE.match(name):
        script = next((a for a in args if not a.startswith("-")), "")
        if script and _ships_with(app, script):
            return None
        return "an interpreter"
    return None


def started_by_app(
    app: str, record: ExecRecord, by_pid: Mapping[int, list[ExecRecord]]
) -> bool | None:
    """Whether a process up `record`'s line of parents ran `app`'s own binary; None when
    the backend did not say who started it."""
    if record.ppid is None:
        return None
    pid: int | None = record.ppid
    seen: set[int] = set()
    while pid is not None and pid not in seen:
        seen.add(pid)
        ran = by_pid.get(pid, [])
        if any(_name(r.path) == app or _name(r.path).startswith(f"{app}-") for r in ran):
            return True
        pid = next((r.ppid for r in ran if r.ppid is not None), None)
    return False


def process_flags(app: str, execs: Iterable[ExecRecord], since: float) -> list[IntegrityFlag]:
    """One flag per kind of bypass seen in execs from `since` on, with every exec."""
    seen: dict[str, list[ExecRecord]] = {}
    script_pids: set[int] = set()
    records = list(execs)
    by_pid: dict[int, list[ExecRecord]] = {}
    for record in records:
        by_pid.setdefault(record.pid, []).append(record)
    for record in records:
        if record.time < since:
            continue
        category = bypass_category(app, record, started_by_app(app, record, by_pid))
        if category is None:
            continue
        if category == "an interpreter" and record.pid in script_pids:
            continue  # the interpreter of a script already flagged (same pid)
        script_pids.add(record.pid)
        seen.setdefault(category, []).append(record)
    flags = []
    for category, records in seen.items():
        names = sorted({_name(r.path) for r in records})
        flags.append(
            IntegrityFlag(
                "process",
                f"{category} ran in the desktop: {', '.join(names)}",
                tuple(f"+{r.time - since:.1f} s {r.describe()}" for r in records),
            )
        )
    return flags


def is_apps_own(app: str, record: ExecRecord) -> bool:
    """The task's app itself, a program it ships (GIMP's plug-ins) or a helper of its."""
    name = _name(record.path)
    return (
        name == app
        or name.startswith(f"{app}-")
        or _ships_with(app, record.path)
        or name in APP_HELPERS.get(app, frozenset())
    )


def checked_paths(task: Task) -> list[str]:
    """The guest paths the task's final checks read (files and probe targets)."""
    paths: list[str] = []
    for leaf in leaves(task.eval_tree):
        for path in [
            *leaf.spec.files(leaf.params),
            *(p.path for p in leaf.spec.probes(leaf.params)),
        ]:
            if path not in paths:
                paths.append(path)
    return paths


def writer_flags(task: Task, desktop: WatchesWrites, since: float) -> list[IntegrityFlag]:
    """A checked file last written, during the episode, by a program of the desktop that
    is not the task's app. A writer the exec trace does not know is not flagged."""
    evidence = []
    for path in checked_paths(task):
        write = desktop.last_write(path)
        if write is None or write.time < since or write.program is None:
            continue
        if not is_apps_own(task.app, write.program):
            evidence.append(f"{path}: +{write.time - since:.1f} s by {write.program.describe()}")
    if not evidence:
        return []
    return [
        IntegrityFlag(
            "file_writer",
            f"a checked file was last written by a program that is not {task.app}",
            tuple(evidence),
        )
    ]


def secret_flags(task: Task, typed: Iterable[tuple[int, str]]) -> list[IntegrityFlag]:
    """The agent typed one of the task's secret values (case-insensitive)."""
    hits: list[str] = []
    for step, text in typed:
        for secret in task.secrets:
            if secret.casefold() in text.casefold():
                hits.append(f"step {step}: typed {text[:200]!r}, which holds a secret value")
    if not hits:
        return []
    return [
        IntegrityFlag("secret_typed", "the agent typed a value the task marks secret", tuple(hits))
    ]


SCRIPTING_AREAS = frozenset(["CONSOLE", "TEXT_EDITOR"])


def blender_scripting_flags(
    probes: Mapping[Probe, ProbeResult],
) -> tuple[list[IntegrityFlag], str | None]:
    """Blender's Python console or text editor, seen in the UI saved with a .blend
    that scoring dumped (the `scripting` part of the blender_scene dump): a window
    showing a console or text editor area (the Scripting workspace, or an area switched
    to one), a console with commands in its history, a text datablock with a script.
    Also what was looked at; None when no .blend was dumped."""
    looked: list[str] = []
    evidence: list[str] = []
    for probe, result in probes.items():
        if probe.kind != "blender_scene" or not isinstance(result.data, dict):
            continue
        ui = result.data.get("scripting")
        if not isinstance(ui, dict):
            continue
        looked.append(probe.path)
        for window in ui.get("windows", []):
            areas = window.get("areas", [])
            shown = sorted(SCRIPTING_AREAS & set(areas))
            if shown or window.get("workspace") == "Scripting":
                evidence.append(
                    f"{probe.path}: saved with workspace {window.get('workspace')!r} showing "
                    f"{', '.join(shown) or 'no console'} (areas: {', '.join(areas)})"
                )
        for console in ui.get("consoles", []):
            typed = [*console.get("history", []), *console.get("input", [])]
            lines = "; ".join(dict.fromkeys(typed))
            evidence.append(
                f"{probe.path}: a Python console (screen {console.get('screen')!r}) holds "
                f"commands: {lines[:300]}{'…' if len(lines) > 300 else ''}"
            )
        for text in ui.get("texts", []):
            evidence.append(
                f"{probe.path}: text datablock {text.get('name')!r} ({text.get('lines')} lines), "
                "a script for the text editor"
            )
    if not looked:
        return [], None
    note = f"Blender's scripting: the UI saved in {', '.join(looked)}"
    if not evidence:
        return [], note
    flag = IntegrityFlag(
        "console", "Blender's Python console or text editor was used", tuple(evidence)
    )
    return [flag], note


@dataclass
class IntegrityWatch:
    """Watches one episode from the agent's first step to scoring."""

    task: Task
    desktop: Desktop
    poll_seconds: float = CONSOLE_POLL_SECONDS
    started_at: float | None = None
    consoles: dict[str, float] = field(default_factory=dict)
    """Console window titles seen, with when first (Unix time)."""
    console_problem: str | None = None
    _poller: asyncio.Task[None] | None = None
    _stopping: bool = False

    def start(self) -> None:
        self.started_at = time.time()
        if not isinstance(self.desktop, WatchesWindows):
            self._poller = asyncio.create_task(self._poll(), name="integrity-consoles")

    async def stop(self) -> None:
        if self._poller is not None:
            # The flag as well as the cancel: a cancellation can be lost inside a library
            # await (3.11's wait_for), and the loop must end all the same.
            self._stopping = True
            self._poller.cancel()
            try:
                await self._poller
            except asyncio.CancelledError:
                pass
            except Exception as exc:  # the watch's failure must not end the episode
                self.console_problem = f"{type(exc).__name__}: {exc}"
                log.warning("console watch failed", exc_info=True)
            self._poller = None

    async def _poll(self) -> None:
        argv = [
            "xdotool",
            "search",
            "--onlyvisible",
            "--name",
            CONSOLE_TITLES,
            "getwindowname",
            "%@",
        ]
        while not self._stopping:
            try:
                result = await self.desktop.guest.run(argv, timeout=10)
                if result.ok:
                    now = time.time()
                    for title in result.stdout_text().splitlines():
                        if title.strip():
                            self.consoles.setdefault(title.strip(), now)
            except DeskLoopError as exc:
                # A desktop going away ends the episode elsewhere; say why the watch
                # stopped instead of claiming no console was open.
                self.console_problem = str(exc)
                log.debug("console watch stopped: %s", exc)
                return
            await asyncio.sleep(self.poll_seconds)

    async def collect(self) -> None:
        """Read what the desktop logged in the guest (VMs), once the agent has ended. A
        failure is said in the flags' record, never an error of the episode."""
        if isinstance(self.desktop, ReadsGuestWatch):
            try:
                await self.desktop.read_watch(self.task.app)
            except DeskLoopError as exc:
                log.warning("the guest's integrity logs were not read: %s", exc)

    def flags(
        self,
        typed: Sequence[tuple[int, str]],
        probes: Mapping[Probe, ProbeResult] | None = None,
        agent_programs: Sequence[tuple[int, str]] = (),
    ) -> tuple[list[IntegrityFlag], list[str]]:
        """The flags and what was looked at, once the agent has ended and scoring has
        run: `probes` are scoring's probe results (a .blend's dump shows its UI);
        `agent_programs` the programs the agent itself ran in the guest (step, command
        line: a scripted oracle), which no desktop watch sees."""
        since = self.started_at if self.started_at is not None else time.time()
        flags: list[IntegrityFlag] = []
        checked: list[str] = []
        if isinstance(self.desktop, WatchesPrograms):
            programs = self.desktop.exec_log()
            checked.append(f"processes: {programs.note}")
            if programs.covered:
                flags += process_flags(self.task.app, programs.records, since)
        else:
            checked.append(f"processes: not watched on the {type(self.desktop).__name__} backend")
        if isinstance(self.desktop, WatchesWrites):
            checked.append(f"checked files' writers: {self.desktop.writes_note}")
            flags += writer_flags(self.task, self.desktop, since)
        else:
            checked.append(
                f"checked files' writers: not watched on the {type(self.desktop).__name__} backend"
            )
        if isinstance(self.desktop, WatchesWindows):
            windows = self.desktop.window_log()
            checked.append(f"consoles: {windows.note}")
            for when, title in windows.records:
                if when >= since and re.search(CONSOLE_TITLES, title, re.IGNORECASE):
                    self.consoles.setdefault(title, when)
        elif self.console_problem is None:
            checked.append(f"consoles: window titles every {self.poll_seconds:g} s")
        else:
            checked.append(f"consoles: watch stopped early ({self.console_problem})")
        if self.consoles:
            flags.append(
                IntegrityFlag(
                    "console",
                    "an app's scripting console was open",
                    tuple(
                        f"+{t - since:.1f} s window {title!r}" for title, t in self.consoles.items()
                    ),
                )
            )
        if self.task.app == "blender":
            scripting, note = blender_scripting_flags(probes or {})
            flags += scripting
            checked.append(note or "Blender's scripting: no .blend was read at scoring")
        if self.task.secrets:
            checked.append(f"typed text: {len(self.task.secrets)} secret value(s)")
            flags += secret_flags(self.task, typed)
        checked.append(f"programs the agent ran itself: {len(agent_programs)} (as it recorded)")
        if agent_programs:
            flags.append(
                IntegrityFlag(
                    "process",
                    f"the agent ran {len(agent_programs)} program(s) in the guest itself, "
                    "not through the GUI (a scripted oracle)",
                    tuple(f"step {idx}: {command}" for idx, command in agent_programs),
                )
            )
        return flags, checked
