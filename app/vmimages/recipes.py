"""VM image recipes (`vm_images/`): which layers an image stacks, the packages of each
layer, the hashes that key the build cache, and the Debian mirror to build from.

An image is a Debian root filesystem made of *layers* (package lists in
`vm_images/layers/`, stacked as `vm_images/images.yaml` says), then configured
(`vm_images/files/` copied in, `vm_images/configure.sh` run inside it). Each layer is
keyed by the hash of its package list and of every layer below it; an image by its
layers' hashes plus the configure stage's files (`recipe_hash`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import Field, ValidationInfo, field_validator

from app.core.errors import DeskLoopError
from app.core.validation import StrictModel, read_yaml, validate

RECIPES_DIR = Path(__file__).resolve().parents[2] / "vm_images"
MANIFEST_VERSION = 1


class ImageError(DeskLoopError):
    """A recipe is malformed or an image could not be built or found."""

    title = "Image error"
    kind = "image"


# ---------------------------------------------------------------- recipes


class ImageSpec(StrictModel):
    """One image in `images.yaml`."""

    layers: Annotated[list[str], Field(min_length=1)]
    """Its layers, bottom first: each is the package list `layers/<layer>.txt`."""
    memory_mib: Annotated[int, Field(strict=True, ge=256)] = 1024
    """The guest memory a desktop of this image gets unless told otherwise (MiB)."""

    @field_validator("layers")
    @classmethod
    def _layers_exist(cls, layers: list[str], info: ValidationInfo) -> list[str]:
        # The loader passes the recipes folder as validation context: a layer is the
        # package list of that name beside the file.
        folder = (info.context or {}).get("recipes")
        if folder is None:
            return layers
        missing = [x for x in layers if not (Path(folder) / "layers" / f"{x}.txt").is_file()]
        if missing:
            raise ValueError(", ".join(f"no package list layers/{layer}.txt" for layer in missing))
        return layers


class RecipesFile(StrictModel):
    """`vm_images/images.yaml`: the suite, and each image's layers and defaults."""

    suite: Annotated[str, Field(min_length=1)]
    """The Debian suite every image is built from, such as bookworm."""
    images: dict[str, ImageSpec]
    """Images by name (`deskloop image build NAME`)."""


@dataclass(frozen=True)
class Recipe:
    """An image as the builder and the desktops use it: its spec and the suite."""

    name: str
    layers: tuple[str, ...]
    memory_mib: int
    suite: str


def load_recipes(recipes: Path = RECIPES_DIR) -> dict[str, Recipe]:
    """Every image recipe in `recipes/images.yaml`, checked against `layers/`.

    Raises:
        ImageError: the file is missing or malformed, or names a missing layer; one
            line per problem, each naming the file and the field path.
    """
    path = recipes / "images.yaml"
    raw, _ = read_yaml(path, "image recipes", ImageError)
    spec = validate(
        RecipesFile, raw, path, "image recipe", error=ImageError, context={"recipes": recipes}
    )
    return {
        name: Recipe(name, tuple(image.layers), image.memory_mib, spec.suite)
        for name, image in spec.images.items()
    }


def get_recipe(name: str, recipes: Path = RECIPES_DIR) -> Recipe:
    all_recipes = load_recipes(recipes)
    if name not in all_recipes:
        raise ImageError(
            f"no image recipe {name!r} in {recipes / 'images.yaml'}; "
            f"available: {', '.join(sorted(all_recipes))}"
        )
    return all_recipes[name]


def read_packages(layer: str, recipes: Path = RECIPES_DIR) -> list[str]:
    """The packages of a layer: one per line, '#' comments and blank lines ignored."""
    path = recipes / "layers" / f"{layer}.txt"
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise ImageError(f"{path}: cannot read the package list: {exc}") from exc
    packages = []
    for number, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        if " " in text or "/" in text:
            raise ImageError(f"{path}:{number}: one package name per line, got {text!r}")
        packages.append(text)
    if not packages:
        raise ImageError(f"{path}: the layer lists no packages")
    return packages


def _sha(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def layer_hashes(recipe: Recipe, recipes: Path = RECIPES_DIR) -> list[tuple[str, str]]:
    """(layer, hash) from the bottom up; a hash covers its layer and all below it."""
    result: list[tuple[str, str]] = []
    parent = f"suite={recipe.suite}"
    for layer in recipe.layers:
        parent = _sha(parent, layer, "\n".join(read_packages(layer, recipes)))
        result.append((layer, parent))
    return result


def _tree_hash(root: Path) -> str:
    """Names, modes and contents of every file under `root` (the configure stage)."""
    parts = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() or p.is_symlink()):
        rel = path.relative_to(root).as_posix()
        content = os.readlink(path) if path.is_symlink() else path.read_bytes().hex()
        parts.append(f"{rel}:{path.lstat().st_mode:o}:{content}")
    return _sha(*parts)


def recipe_hash(recipe: Recipe, recipes: Path = RECIPES_DIR) -> str:
    """The cache key of an image: its layers and its configure stage."""
    top = layer_hashes(recipe, recipes)[-1][1]
    return _sha(
        f"manifest-v{MANIFEST_VERSION}",
        top,
        _tree_hash(recipes / "files"),
        (recipes / "configure.sh").read_text(),
    )


# ---------------------------------------------------------------- mirror


def _deb822_entries(text: str) -> Iterator[dict[str, str]]:
    for block in text.split("\n\n"):
        entry: dict[str, str] = {}
        for line in block.splitlines():
            if line.startswith("#") or ":" not in line or line[:1].isspace():
                continue
            key, value = line.split(":", 1)
            entry[key.strip().lower()] = value.strip()
        if entry:
            yield entry


def host_apt_sources(suite: str, apt_dir: Path = Path("/etc/apt")) -> list[str]:
    """One-line `deb URI SUITE COMPONENTS` entries for `suite` (and its -updates and
    -security suites) from this host's apt configuration, in file order."""
    files = [apt_dir / "sources.list"]
    parts = apt_dir / "sources.list.d"
    if parts.is_dir():
        files += sorted(p for p in parts.iterdir() if p.suffix in (".list", ".sources"))

    def wanted(s: str) -> bool:
        return s == suite or s.startswith(f"{suite}-")

    lines: list[str] = []
    for path in files:
        try:
            text = path.read_text()
        except OSError:
            continue
        if path.suffix == ".sources":
            for entry in _deb822_entries(text):
                if entry.get("enabled", "yes").lower() == "no":
                    continue
                if "deb" not in entry.get("types", "").split():
                    continue
                comps = entry.get("components", "main")
                for uri in entry.get("uris", "").split():
                    for s in entry.get("suites", "").split():
                        if wanted(s):
                            lines.append(f"deb {uri} {s} {comps}")
        else:
            for raw in text.splitlines():
                words = raw.split("#", 1)[0].split()
                if not words or words[0] != "deb":
                    continue
                words = words[1:]
                if words and words[0].startswith("["):  # [arch=amd64 signed-by=...]
                    while words and not words[0].endswith("]"):
                        words.pop(0)
                    words = words[1:]
                if len(words) >= 2 and wanted(words[1]):
                    lines.append(" ".join(["deb", *words]))
    return list(dict.fromkeys(lines))


def apt_sources(suite: str, mirror: str | None = None) -> list[str]:
    """The package sources an image is built from.

    Raises:
        ImageError: no mirror given and none for `suite` in this host's apt config.
    """
    if mirror:
        if not mirror.startswith(("http://", "https://", "file:/")):
            raise ImageError(f"--mirror {mirror!r}: expected an http(s):// or file:/ URL")
        return [f"deb {mirror} {suite} main", f"deb {mirror} {suite}-updates main"]
    lines = host_apt_sources(suite)
    if not lines:
        raise ImageError(
            f"no Debian mirror for {suite!r} in /etc/apt/sources.list or "
            "/etc/apt/sources.list.d/; pass one with --mirror URL"
        )
    return lines
