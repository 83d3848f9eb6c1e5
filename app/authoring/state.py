"""Snapshots of a desktop's home: which files exist, their hashes, and copies of them.

At the start of a recording, at each boundary the author marks and at the end, the
home is listed and every file's bytes are kept, so the diff between two moments can
say what the person made and the proposals can copy what was produced into the task
(an exported image becomes the expected image of `image_similarity`).

A snapshot lives in the recording folder:

- ``states/<label>.json`` — the snapshot (label ``start``, ``boundary-1`` ..., ``end``):
  each file's path relative to the home, size, modification time, SHA-256, and the
  facts `app.authoring.analysis` read from it. Written atomically.
- ``states/blobs/<sha256>`` — the files' bytes, content-addressed, so a file that did
  not change between moments is stored once.

Hidden paths (a name starting with '.', and everything below it) are left out: they are
the apps' configuration and caches, which churn on every start and are never what a
task asks for. A file larger than `MAX_FILE_BYTES` is listed with its size but not
copied (its entry says so). Only the Guest protocol is used (`find` run as an argv
list, `read_file`), so the same code captures a local desktop and a VM; only files
whose size or modification time changed since the previous snapshot are read again.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.authoring.recording import RecordingError
from app.core.errors import GuestError
from app.core.files import write_atomic
from app.desktops.base import Guest

STATES_DIR = "states"
BLOBS_DIR = "blobs"
MAX_FILE_BYTES = 64 * 1024 * 1024
"""Files over this size are listed but not copied (a render of a long video, say)."""
LIST_TIMEOUT = 60.0
READ_CONCURRENCY = 8
"""Files read at once: an SSH guest answers each read in ~0.5 s, so reads overlap."""
LABEL_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
SNAPSHOT_FORMAT = 1

# find's -printf: path relative to the root, size, mtime (seconds.fraction), each ended
# by a NUL so names with newlines or spaces come back whole.
_FIND_FORMAT = "%P\\0%s\\0%T@\\0"


@dataclass(frozen=True)
class FileEntry:
    """One regular file under the home at the moment of a snapshot."""

    path: str
    """Relative to the home, '/'-separated: 'Desktop/out.png'."""
    size: int
    mtime: float
    """Modification time, Unix seconds, as the guest's clock says."""
    sha256: str | None
    """The bytes' hash; None when they were not copied (`note` says why)."""
    note: str | None = None

    @property
    def guest_path(self) -> str:
        """The path as tasks name it: '~/Desktop/out.png'."""
        return f"~/{self.path}"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"size": self.size, "mtime": self.mtime, "sha256": self.sha256}
        if self.note is not None:
            data["note"] = self.note
        return data


@dataclass
class StateSnapshot:
    """The home at one moment, plus what analysis read from its files."""

    label: str
    taken: float
    """When it was taken (Unix time, this machine's clock)."""
    home: str
    """The guest's home, as it said (its absolute path differs between desktops)."""
    files: dict[str, FileEntry] = field(default_factory=dict)
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per file path: what `app.authoring.analysis` read from it (its `kind` and the
    kind's facts, or an `error`). Files of no known kind have none."""

    def to_json(self) -> dict[str, Any]:
        return {
            "format": SNAPSHOT_FORMAT,
            "label": self.label,
            "taken": self.taken,
            "home": self.home,
            "files": {path: entry.to_json() for path, entry in sorted(self.files.items())},
            "facts": {path: self.facts[path] for path in sorted(self.facts)},
        }

    @classmethod
    def from_json(cls, data: Any, where: str) -> StateSnapshot:
        if not isinstance(data, dict) or data.get("format") != SNAPSHOT_FORMAT:
            raise RecordingError(f"{where}: not a state snapshot (format {SNAPSHOT_FORMAT})")
        try:
            files = {
                path: FileEntry(
                    path=path,
                    size=int(raw["size"]),
                    mtime=float(raw["mtime"]),
                    sha256=raw["sha256"],
                    note=raw.get("note"),
                )
                for path, raw in data["files"].items()
            }
            return cls(
                label=str(data["label"]),
                taken=float(data["taken"]),
                home=str(data["home"]),
                files=files,
                facts=dict(data.get("facts") or {}),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise RecordingError(f"{where}: malformed snapshot: {exc!r}") from None


def states_dir(folder: Path) -> Path:
    return folder / STATES_DIR


def blob_path(folder: Path, sha256: str) -> Path:
    """Where the copy of the bytes with this hash lives in recording `folder`."""
    if not re.fullmatch(r"[0-9a-f]{64}", sha256):
        raise RecordingError(f"{folder}: {sha256!r} is not a SHA-256")
    return folder / STATES_DIR / BLOBS_DIR / sha256


def snapshot_path(folder: Path, label: str) -> Path:
    check_label(label)
    return folder / STATES_DIR / f"{label}.json"


def check_label(label: str) -> str:
    if not LABEL_PATTERN.match(label):
        raise RecordingError(
            f"snapshot label {label!r}: use lowercase letters, digits and dashes "
            "(start, boundary-1, end)"
        )
    return label


def boundary_label(index: int) -> str:
    """The label of the snapshot at the `index`-th boundary (1-based)."""
    return f"boundary-{index}"


def save_snapshot(folder: Path, snapshot: StateSnapshot) -> Path:
    """Write ``states/<label>.json`` atomically (a crash leaves the old one or none)."""
    path = snapshot_path(folder, snapshot.label)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, (json.dumps(snapshot.to_json(), indent=1) + "\n").encode("utf-8"))
    return path


def load_snapshot(folder: Path, label: str) -> StateSnapshot:
    """The snapshot `label` of recording `folder`.

    Raises:
        RecordingError: no such snapshot, or not one.
    """
    path = snapshot_path(folder, label)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RecordingError(f"{path}: no such snapshot") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordingError(f"{path}: cannot read: {exc}") from None
    return StateSnapshot.from_json(data, str(path))


def snapshot_labels(folder: Path) -> list[str]:
    """The snapshots a recording holds, in order: start, boundary-1, ..., end."""
    found = {p.stem for p in states_dir(folder).glob("*.json") if LABEL_PATTERN.match(p.stem)}

    def order(label: str) -> tuple[int, int]:
        if label == "start":
            return (0, 0)
        if label.startswith("boundary-") and label[9:].isdigit():
            return (1, int(label[9:]))
        return (2, 0) if label == "end" else (3, 0)

    return sorted(found, key=lambda label: (order(label), label))


def read_blob(folder: Path, entry: FileEntry) -> bytes | None:
    """The copied bytes of `entry`, or None when they were not copied."""
    if entry.sha256 is None:
        return None
    try:
        return blob_path(folder, entry.sha256).read_bytes()
    except FileNotFoundError:
        return None


async def list_home(guest: Guest, timeout: float = LIST_TIMEOUT) -> list[tuple[str, int, float]]:
    """(path relative to the home, size, mtime) of every regular file not under a hidden
    name, as the guest's `find` sees them.

    Raises:
        GuestError: `find` could not run or failed.
    """
    argv = [
        "find",
        guest.home,
        "-mindepth",
        "1",
        "-name",
        ".*",
        "-prune",
        "-o",
        "-type",
        "f",
        "-printf",
        _FIND_FORMAT,
    ]
    result = await guest.run(argv, timeout=timeout)
    # find exits 1 when some folder could not be read (permissions) yet lists the rest.
    if result.returncode not in (0, 1) or (result.returncode == 1 and not result.stdout):
        message = result.stderr.decode("utf-8", "replace").strip()
        raise GuestError(f"listing {guest.home} failed (exit {result.returncode}): {message}")
    fields = result.stdout.split(b"\0")
    if fields and fields[-1] == b"":
        fields.pop()
    if len(fields) % 3:
        raise GuestError(f"listing {guest.home}: find printed a cut-off line")
    listed: list[tuple[str, int, float]] = []
    for i in range(0, len(fields), 3):
        name = fields[i].decode("utf-8", "surrogateescape")
        listed.append((name, int(fields[i + 1]), float(fields[i + 2])))
    return listed


async def capture_state(
    guest: Guest,
    folder: Path,
    label: str,
    *,
    previous: StateSnapshot | None = None,
    max_file_bytes: int = MAX_FILE_BYTES,
) -> StateSnapshot:
    """List the home, copy each new or changed file's bytes into ``states/blobs`` and
    write ``states/<label>.json``.

    A file whose size and modification time equal its entry in `previous` (the last
    snapshot of this desktop) is not read again: its hash and copy are reused, so a
    boundary snapshot costs one `find` plus the files that changed. Facts are carried
    over the same way (a file with the same hash has the same facts); analysis fills
    in the rest.

    Raises:
        RecordingError: `label` is not a snapshot label, or the folder cannot be written.
        GuestError: the home could not be listed.
    """
    check_label(label)
    listed = await list_home(guest)
    blobs = folder / STATES_DIR / BLOBS_DIR
    try:
        blobs.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RecordingError(f"{blobs}: cannot write: {exc.strerror or exc}") from None
    limit = asyncio.Semaphore(READ_CONCURRENCY)

    async def entry_of(path: str, size: int, mtime: float) -> FileEntry:
        known = previous.files.get(path) if previous is not None else None
        if (
            known is not None
            and known.size == size
            and known.mtime == mtime
            and (known.sha256 is None or blob_path(folder, known.sha256).is_file())
        ):
            return known
        if size > max_file_bytes:
            return FileEntry(path, size, mtime, None, f"over {max_file_bytes} bytes, not copied")
        async with limit:
            try:
                data = await guest.read_file(f"~/{path}", max_file_bytes)
            except GuestError as exc:
                # Gone between the listing and the read, or unreadable: noted, not fatal.
                return FileEntry(path, size, mtime, None, f"not copied: {exc}")
        digest = hashlib.sha256(data).hexdigest()
        _store_blob(blob_path(folder, digest), data)
        return FileEntry(path, len(data), mtime, digest)

    entries = await asyncio.gather(*(entry_of(*item) for item in listed))
    snapshot = StateSnapshot(label, time.time(), guest.home, {e.path: e for e in entries})
    if previous is not None:
        carry_facts(previous, snapshot)
    save_snapshot(folder, snapshot)
    return snapshot


def carry_facts(previous: StateSnapshot, snapshot: StateSnapshot) -> None:
    """Copy `previous`'s facts of every file whose bytes did not change."""
    for path, entry in snapshot.files.items():
        before = previous.files.get(path)
        facts = previous.facts.get(path)
        if facts is not None and before is not None and before.sha256 == entry.sha256:
            snapshot.facts.setdefault(path, facts)


def _store_blob(path: Path, data: bytes) -> None:
    if path.is_file():
        return  # content-addressed: the same hash is the same bytes
    try:
        write_atomic(path, data)
    except OSError as exc:
        raise RecordingError(f"{path}: cannot write: {exc.strerror or exc}") from None
