"""Kdenlive checks on the project beyond its timeline: the bin's clips, clip groups and
the proxy settings.

All three live on the `main_bin` playlist of the project file (APP_FORMATS.md §3): its
`<entry>` elements are the bin's clips, `kdenlive:docproperties.groups` holds the
groups as JSON, and `kdenlive:docproperties.enableproxy` and friends the proxy
settings. The reader here is small and separate from app.checks.mlt's timeline model,
since none of this changes what the timeline shows; it parses with mlt's hardened
parser.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from typing import Any, Literal

from lxml import etree
from pydantic import Field, model_validator

from app.checks.base import (
    CheckParams,
    CheckResult,
    CheckState,
    GuestPath,
    failed,
    needs_any,
    verdict,
)
from app.checks.files import file_bytes
from app.checks.mlt import ProjectError, _parser, _props
from app.checks.registry import register

DOC = "kdenlive:docproperties."


@dataclass(frozen=True)
class BinClip:
    """One clip of the project bin: its file (or generator) and the name it shows."""

    bin_id: str
    resource: str
    name: str
    """The name Kdenlive shows: the rename if there is one, else the file's name."""
    service: str

    def matches(self, wanted: str) -> bool:
        """Named by its file name ('clip.mp4'), its resource as written, or its shown name."""
        base = posixpath.basename(self.resource.replace("\\", "/"))
        return wanted in (self.name, self.resource, base)


@dataclass(frozen=True)
class BinState:
    clips: tuple[BinClip, ...]
    groups: tuple[dict[str, Any], ...]
    settings: dict[str, str]
    """main_bin's kdenlive:docproperties.*, without the prefix."""


def read_bin(data: bytes) -> BinState:
    """The bin, groups and document settings of a Kdenlive project.

    Raises:
        ProjectError: not XML, not MLT, no main_bin, or unreadable groups, saying which.
    """
    try:
        root = etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as exc:
        raise ProjectError(f"not well-formed XML ({exc})") from None
    if root.tag != "mlt":
        raise ProjectError(f"root element is <{root.tag}>, not <mlt>")
    by_id = {str(e.get("id")): e for e in root if e.get("id")}
    main_bin = by_id.get("main_bin")
    if main_bin is None or main_bin.tag != "playlist":
        raise ProjectError("no main_bin playlist: this is not a Kdenlive project")
    props = _props(main_bin)
    clips = []
    for entry in main_bin.iterchildren("entry"):
        element = by_id.get(str(entry.get("producer")))
        if element is None:
            continue
        p = _props(element)
        resource = p.get("kdenlive:originalurl") or p.get("resource", "")
        base = posixpath.basename(resource.replace("\\", "/"))
        name = p.get("kdenlive:clipname") or base
        clips.append(
            BinClip(p.get("kdenlive:id", ""), resource, name, p.get("mlt_service", element.tag))
        )
    raw = props.get(DOC + "groups", "").strip() or "[]"
    try:
        groups = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ProjectError(f"the groups property is not JSON ({exc})") from None
    if not isinstance(groups, list):
        raise ProjectError("the groups property is not a list")
    settings = {k[len(DOC) :]: v for k, v in props.items() if k.startswith(DOC)}
    return BinState(tuple(clips), tuple(g for g in groups if isinstance(g, dict)), settings)


def load_bin(state: CheckState, path: str) -> BinState | CheckResult:
    data = file_bytes(state, path)
    if isinstance(data, CheckResult):
        return data
    try:
        return read_bin(data)
    except ProjectError as exc:
        return failed(f"{path} is not a readable Kdenlive project: {exc}")


# --- the bin -------------------------------------------------------------------------


class BinParams(CheckParams):
    path: GuestPath
    """The guest project file, e.g. '~/Videos/edit.kdenlive'."""
    present: tuple[str, ...] = ()
    """Clips that must be in the bin, by file name ('clip.mp4') or shown name."""
    absent: tuple[str, ...] = ()
    """Clips that must not be in the bin (removed from the project, not just the timeline)."""
    min_count: int | None = Field(default=None, ge=0)
    """The bin must hold at least this many clips."""
    max_count: int | None = Field(default=None, ge=0)
    """The bin must hold at most this many clips."""

    @model_validator(mode="after")
    def _something(self) -> BinParams:
        if not (self.present or self.absent) and self.min_count is None and self.max_count is None:
            raise ValueError("give present, absent, min_count or max_count")
        return self


@register("kdenlive_bin", BinParams, files=("path",))
def kdenlive_bin(state: CheckState, p: BinParams) -> CheckResult:
    """Passes when the project bin holds every `present` clip, none of the `absent`
    ones, and a number of clips within the bounds. A clip in the bin counts whether or
    not it is on the timeline."""
    found = load_bin(state, p.path)
    if isinstance(found, CheckResult):
        return found
    clips = found.clips
    problems = [f"no {w!r}" for w in p.present if not any(c.matches(w) for c in clips)]
    problems += [f"{w!r} is still there" for w in p.absent if any(c.matches(w) for c in clips)]
    if p.min_count is not None and len(clips) < p.min_count:
        problems.append(f"{len(clips)} clips, expected at least {p.min_count}")
    if p.max_count is not None and len(clips) > p.max_count:
        problems.append(f"{len(clips)} clips, expected at most {p.max_count}")
    listed = ", ".join(c.name or c.resource for c in clips) or "empty"
    text = f"bin of {p.path} ({len(clips)} clips: {listed})"
    return verdict(not problems, f"{text}: " + ("; ".join(problems) if problems else "as expected"))


# --- groups --------------------------------------------------------------------------


def _leaves(node: dict[str, Any]) -> int:
    if node.get("type") == "Leaf":
        return 1 if node.get("leaf") == "clip" else 0
    return sum(_leaves(c) for c in node.get("children") or [] if isinstance(c, dict))


class GroupsParams(CheckParams):
    path: GuestPath
    """The guest project file."""
    group_type: Literal["Normal", "AVSplit", "any"] = "Normal"
    """Which groups count: 'Normal' (made with Group Clips, ctrl+g), 'AVSplit' (the
    video and audio halves Kdenlive ties together itself), or 'any'."""
    min_groups: int = Field(default=1, ge=0)
    """At least this many such groups."""
    max_groups: int | None = Field(default=None, ge=0)
    """At most this many such groups."""
    min_clips: int = Field(default=2, ge=1)
    """A group counts only when it holds at least this many timeline clips (nested
    groups' clips included; a grouped A/V clip is two)."""


@register("kdenlive_groups", GroupsParams, files=("path",))
def kdenlive_groups(state: CheckState, p: GroupsParams) -> CheckResult:
    """Passes when the project has between `min_groups` and `max_groups` top-level
    groups of the type, each counted only with at least `min_clips` clips."""
    found = load_bin(state, p.path)
    if isinstance(found, CheckResult):
        return found
    shown = [f"{g.get('type')} of {_leaves(g)}" for g in found.groups]
    counted = [
        g
        for g in found.groups
        if (p.group_type == "any" or g.get("type") == p.group_type) and _leaves(g) >= p.min_clips
    ]
    n = len(counted)
    ok = n >= p.min_groups and (p.max_groups is None or n <= p.max_groups)
    want = f"≥ {p.min_groups}" if p.max_groups is None else f"{p.min_groups}..{p.max_groups}"
    kind = "" if p.group_type == "any" else f"{p.group_type} "
    return verdict(
        ok,
        f"{p.path}: {n} {kind}groups of ≥ {p.min_clips} clips, expected {want} "
        f"(groups: {', '.join(shown) or 'none'})",
    )


# --- proxy settings ------------------------------------------------------------------


class ProxyParams(CheckParams):
    path: GuestPath
    """The guest project file."""
    enabled: bool | None = None
    """Project Settings → Proxy clips: whether proxy clips are enabled."""
    generate: bool | None = None
    """Whether proxies are made for video clips larger than `min_size` as they are added."""
    min_size: int | None = Field(default=None, ge=0)
    """The frame width in pixels above which a proxy is made (Kdenlive's proxyminsize)."""
    images: bool | None = None
    """Whether proxies are made for large images too."""

    _needs_one = needs_any(
        "enabled",
        "generate",
        "min_size",
        "images",
        message="give enabled, generate, min_size or images",
    )


def _flag(value: str | None) -> bool | None:
    return None if value is None else value.strip() == "1"


@register("kdenlive_proxy", ProxyParams, files=("path",))
def kdenlive_proxy(state: CheckState, p: ProxyParams) -> CheckResult:
    """Passes when the project's proxy settings are as given (those left out are not
    looked at)."""
    found = load_bin(state, p.path)
    if isinstance(found, CheckResult):
        return found
    s = found.settings
    checks: list[tuple[str, object, object]] = [
        ("enabled", _flag(s.get("enableproxy")), p.enabled),
        ("generate", _flag(s.get("generateproxy")), p.generate),
        ("images", _flag(s.get("generateimageproxy")), p.images),
    ]
    size = s.get("proxyminsize")
    checks.append(("min_size", int(size) if size and size.isdigit() else size, p.min_size))
    parts = [
        f"{name} {got}" + (" ✓" if got == want else f", expected {want} ✗")
        for name, got, want in checks
        if want is not None
    ]
    ok = all(got == want for _, got, want in checks if want is not None)
    return verdict(ok, f"proxy settings of {p.path}: " + "; ".join(parts))
