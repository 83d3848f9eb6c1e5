"""Comparing two image builds by their manifests: what packages and versions differ.

A manifest records every installed package and its version (`builder.py`), so two builds
of one recipe made weeks apart, or two images (`gimp` and `studio`), can be told apart
without booting either. A side is named by an image (its current build in the cache) or
by a path: a build folder or a `manifest.json` kept from an earlier build (a rebuild of
the same recipe replaces its folder, so keep the manifest to compare against later).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.vmimages.cache import require_image
from app.vmimages.recipes import ImageError

# Fields of a manifest worth showing side by side; packages are compared separately,
# and checksums only say "differs" (their values mean nothing to a reader).
SHOWN_FIELDS = ("name", "suite", "recipe_hash", "built_at", "build_seconds", "disk_bytes")
CHECKSUM_FIELDS = ("disk_sha256", "kernel_sha256", "initrd_sha256")


@dataclass(frozen=True)
class ManifestDiff:
    """How manifest B differs from manifest A."""

    added: dict[str, str] = field(default_factory=dict)
    """Packages only in B, with B's version."""
    removed: dict[str, str] = field(default_factory=dict)
    """Packages only in A, with A's version."""
    changed: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Packages in both at different versions: (A's, B's)."""
    fields: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    """Shown manifest fields whose values differ: (A's, B's)."""
    checksums: tuple[str, ...] = ()
    """Checksum fields that differ (disk, kernel, initrd)."""

    @property
    def same_packages(self) -> bool:
        return not (self.added or self.removed or self.changed)


def load_manifest(ref: str) -> tuple[str, dict[str, Any]]:
    """A manifest by image name or path. Returns (a label for it, the manifest).

    Raises:
        ImageError: the path holds no readable manifest, or the image is not built.
    """
    path = Path(ref).expanduser()
    if "/" in ref or path.suffix == ".json" or path.is_dir():
        file = path / "manifest.json" if path.is_dir() else path
        try:
            manifest = json.loads(file.read_text())
        except OSError as e:
            raise ImageError(f"{file}: cannot read the manifest ({e.strerror})") from None
        except ValueError as e:
            raise ImageError(f"{file}: not a JSON manifest ({e})") from None
        if not isinstance(manifest, dict) or not isinstance(manifest.get("packages"), dict):
            raise ImageError(f"{file}: packages: missing (not an image manifest)")
        return str(file), manifest
    image = require_image(ref)
    return f"{ref} ({image.dir.name})", dict(image.manifest)


def diff_manifests(a: dict[str, Any], b: dict[str, Any]) -> ManifestDiff:
    """What differs from manifest `a` to manifest `b`."""
    pa: dict[str, str] = a.get("packages", {})
    pb: dict[str, str] = b.get("packages", {})
    return ManifestDiff(
        added={name: pb[name] for name in sorted(pb.keys() - pa.keys())},
        removed={name: pa[name] for name in sorted(pa.keys() - pb.keys())},
        changed={
            name: (pa[name], pb[name])
            for name in sorted(pa.keys() & pb.keys())
            if pa[name] != pb[name]
        },
        fields={k: (a.get(k), b.get(k)) for k in SHOWN_FIELDS if a.get(k) != b.get(k)},
        checksums=tuple(k for k in CHECKSUM_FIELDS if a.get(k) != b.get(k)),
    )


def diff_lines(diff: ManifestDiff) -> list[str]:
    """The diff as text, one package per line (`+ name version`, `- …`, `~ name a -> b`)."""
    lines = [f"{key:<16} {va}  ->  {vb}" for key, (va, vb) in diff.fields.items()]
    if diff.checksums:
        lines.append(f"{'differs':<16} {', '.join(diff.checksums)}")
    if diff.same_packages:
        lines.append("packages: the same names and versions")
        return lines
    lines.append(
        f"packages: {len(diff.added)} added, {len(diff.removed)} removed, "
        f"{len(diff.changed)} at another version"
    )
    lines += [f"+ {name} {version}" for name, version in diff.added.items()]
    lines += [f"- {name} {version}" for name, version in diff.removed.items()]
    lines += [f"~ {name} {va} -> {vb}" for name, (va, vb) in diff.changed.items()]
    return lines
