"""Built VM images in the cache: finding, listing and removing them.

Everything lives in the cache directory (`$DESKLOOP_CACHE`, else `~/.cache/deskloop`),
outside git:

    layers/<layer>-<hash>.tar       a root filesystem after that layer
    images/<name>-<hash>/           disk.qcow2, vmlinuz, initrd.img, manifest.json, build.log
    images/<name>.json              the manifest of the current build of <name>
"""

from __future__ import annotations

import contextlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.core.settings import read_settings
from app.vmimages.recipes import RECIPES_DIR, ImageError, get_recipe, recipe_hash


@dataclass(frozen=True)
class Image:
    """A built image: the files a VM boots from, and its manifest."""

    name: str
    dir: Path
    manifest: dict[str, Any]

    @property
    def disk(self) -> Path:
        return self.dir / "disk.qcow2"

    @property
    def kernel(self) -> Path:
        return self.dir / "vmlinuz"

    @property
    def initrd(self) -> Path:
        return self.dir / "initrd.img"

    @property
    def recipe_hash(self) -> str:
        return str(self.manifest["recipe_hash"])

    @property
    def memory_mib(self) -> int:
        return int(self.manifest.get("memory_mib", 1024))


def cache_dir() -> Path:
    """Where images, layers and VM files live: $DESKLOOP_CACHE or ~/.cache/deskloop."""
    return read_settings().cache_root


def images_dir_of(cache: Path) -> Path:
    return cache / "images"


def find_image(name: str, cache: Path | None = None) -> Image | None:
    """The current build of image `name`, or None when it was never built."""
    cache = cache or cache_dir()
    pointer = images_dir_of(cache) / f"{name}.json"
    try:
        manifest = json.loads(pointer.read_text())
    except (OSError, ValueError):
        return None
    image = Image(name, images_dir_of(cache) / str(manifest["dir"]), manifest)
    if not (image.disk.is_file() and image.kernel.is_file() and image.initrd.is_file()):
        return None
    return image


def require_image(name: str, cache: Path | None = None) -> Image:
    image = find_image(name, cache)
    if image is None:
        raise ImageError(
            f"image {name!r} is not built in {cache or cache_dir()}; "
            f"run `deskloop image build {name}`"
        )
    return image


def list_images(cache: Path | None = None) -> list[Image]:
    cache = cache or cache_dir()
    images_dir = images_dir_of(cache)
    if not images_dir.is_dir():
        return []
    found = (find_image(p.stem, cache) for p in sorted(images_dir.glob("*.json")))
    return [image for image in found if image is not None]


def is_current(name: str, cache: Path | None = None, recipes: Path = RECIPES_DIR) -> bool:
    """Whether the built image matches its recipe (no rebuild needed)."""
    image = find_image(name, cache)
    return image is not None and image.recipe_hash == recipe_hash(
        get_recipe(name, recipes), recipes
    )


def remove_tree(path: Path) -> None:
    for p in path.rglob("*"):
        with contextlib.suppress(OSError):
            p.chmod(0o644 if p.is_file() else 0o755)
    shutil.rmtree(path)


def remove_image(name: str, cache: Path | None = None) -> bool:
    """Delete every build of image `name` (not its layers). True if something went."""
    cache = cache or cache_dir()
    images_dir = images_dir_of(cache)
    removed = False
    for path in images_dir.glob(f"{name}-*"):
        if path.is_dir() and path.name[len(name) + 1 :].isalnum():
            remove_tree(path)
            removed = True
    pointer = images_dir / f"{name}.json"
    if pointer.exists():
        pointer.unlink()
        removed = True
    return removed
