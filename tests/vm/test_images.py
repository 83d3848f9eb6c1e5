"""VM image recipes and the image builder (app/vmimages/).

The recipe, hashing and mirror tests are pure. The build test builds the real
`base` image from Debian packages (minutes on a machine without the cache; at
once when the recipe is unchanged) and checks its manifest against the files.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import threading
import time
from pathlib import Path

import pytest

from app.vmimages.builder import build_image, build_lock
from app.vmimages.cache import cache_dir, find_image, require_image
from app.vmimages.recipes import (
    RECIPES_DIR,
    ImageError,
    apt_sources,
    get_recipe,
    host_apt_sources,
    layer_hashes,
    load_recipes,
    read_packages,
    recipe_hash,
)


@pytest.fixture
def recipes(tmp_path: Path) -> Path:
    """A copy of vm_images/ that a test may edit."""
    copy = tmp_path / "vm_images"
    shutil.copytree(RECIPES_DIR, copy)
    return copy


def test_shipped_recipes_are_valid() -> None:
    all_recipes = load_recipes()
    assert set(all_recipes) == {"base", "gimp", "blender", "kdenlive", "web", "studio"}
    assert all(r.layers[0] == "base" for r in all_recipes.values())
    assert all_recipes["studio"].layers == ("base", "gimp", "blender", "kdenlive")
    base = read_packages("base")
    for needed in ("linux-image-amd64", "systemd", "openssh-server", "openbox", "xdotool"):
        assert needed in base
    assert "librsvg2-common" in read_packages("gimp")  # GIMP icons (FIELD_NOTES)
    # Web desktops: Chromium, and the DejaVu fonts the web apps name, as on the host.
    assert all_recipes["web"].layers == ("base", "web")
    assert {"chromium", "fonts-dejavu-core", "fonts-dejavu-extra"} <= set(read_packages("web"))


def test_the_session_user_gets_no_sudo() -> None:
    """The agent's session user `user` must not become root in the guest: no image
    installs sudo or doas, configure.sh gives `user` no group but its own, and no
    sudoers file is copied in. (The base build test checks a built image's packages.)"""
    privileged = {"sudo", "doas", "opendoas", "sudo-ldap", "policykit-1", "pkexec"}
    for layer in sorted(p.stem for p in (RECIPES_DIR / "layers").glob("*.txt")):
        assert not privileged & set(read_packages(layer)), f"layers/{layer}.txt"
    configure = (RECIPES_DIR / "configure.sh").read_text()
    useradd = [line for line in configure.splitlines() if "useradd" in line]
    assert useradd and all(" -G" not in x and "--groups" not in x for x in useradd), useradd
    assert not re.search(r"usermod|gpasswd|adduser\s+user\s", configure)
    files = RECIPES_DIR / "files"
    assert not [p for p in files.rglob("*") if "sudoers" in p.name or "doas" in p.name]


def test_package_lists_ignore_comments_and_reject_junk(recipes: Path) -> None:
    (recipes / "layers" / "gimp.txt").write_text("# a comment\n\ngimp  # the app\n")
    assert read_packages("gimp", recipes) == ["gimp"]
    (recipes / "layers" / "gimp.txt").write_text("gimp librsvg2-common\n")
    with pytest.raises(ImageError, match=r"gimp\.txt:1: one package name per line"):
        read_packages("gimp", recipes)


def test_recipe_errors_name_the_file_and_field(recipes: Path) -> None:
    text = (recipes / "images.yaml").read_text()
    (recipes / "images.yaml").write_text(text.replace("[base, gimp]", "[base, gimpp]", 1))
    with pytest.raises(ImageError, match=r"images\.yaml: images\.gimp\.layers: no package list"):
        load_recipes(recipes)
    with pytest.raises(ImageError, match="no image recipe 'nope'"):
        get_recipe("nope")


def test_recipes_are_a_model_unknown_keys_and_bad_values_name_the_field(recipes: Path) -> None:
    path = recipes / "images.yaml"
    text = path.read_text()
    text = text.replace("memory_mib: 2048", "memory_mib: 100", 1)  # gimp's
    text = text.replace("memory_mib: 3072", "memory_mib: '3072'\n    disk_gib: 8")  # studio's
    path.write_text(text.replace("suite: bookworm", "suite: bookworm\ncolour: red"))
    with pytest.raises(ImageError) as info:
        load_recipes(recipes)
    assert str(info.value).splitlines() == [
        f"{path}: images.gimp.memory_mib: Input should be greater than or equal to 256",
        f"{path}: images.studio.memory_mib: Input should be a valid integer",
        f"{path}: images.studio.disk_gib: unknown key (not part of the image recipe format)",
        f"{path}: colour: unknown key (not part of the image recipe format)",
    ]
    path.write_text("suite: bookworm\nimages:\n  base: {layers: []}\n  gimp: {memory_mib: 2048}\n")
    with pytest.raises(ImageError) as info:
        load_recipes(recipes)
    assert str(info.value).splitlines() == [
        f"{path}: images.base.layers: List should have at least 1 item after validation, not 0",
        f"{path}: images.gimp.layers: required field is missing",
    ]
    path.write_text("suite: bookworm\nimages: [base\n")
    with pytest.raises(ImageError, match=r"images\.yaml: YAML syntax error \(line 3, column 1\)"):
        load_recipes(recipes)


def test_changing_a_layer_changes_only_it_and_what_is_above(recipes: Path) -> None:
    studio = get_recipe("studio", recipes)
    gimp = get_recipe("gimp", recipes)
    before = dict(layer_hashes(studio, recipes))
    gimp_before = recipe_hash(gimp, recipes)
    base_before = recipe_hash(get_recipe("base", recipes), recipes)
    with open(recipes / "layers" / "gimp.txt", "a") as f:
        f.write("gimp-data-extras\n")
    after = dict(layer_hashes(studio, recipes))
    assert after["base"] == before["base"]
    assert after["gimp"] != before["gimp"]
    # blender sits above gimp in studio, so its cached layer there is stale too.
    assert after["blender"] != before["blender"]
    assert recipe_hash(gimp, recipes) != gimp_before
    assert recipe_hash(get_recipe("base", recipes), recipes) == base_before
    # The configure stage is part of every image's key.
    with open(recipes / "configure.sh", "a") as f:
        f.write("# changed\n")
    assert recipe_hash(get_recipe("base", recipes), recipes) != base_before


def test_mirror_comes_from_host_apt_config(tmp_path: Path) -> None:
    apt = tmp_path / "apt"
    (apt / "sources.list.d").mkdir(parents=True)
    (apt / "sources.list").write_text(
        "# comment\ndeb [arch=amd64 signed-by=/k.gpg] http://m.example/debian bookworm main\n"
        "deb-src http://m.example/debian bookworm main\n"
        "deb http://other.example/ubuntu jammy main\n"
    )
    (apt / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://m.example/debian\nSuites: bookworm bookworm-updates\n"
        "Components: main contrib\n\n"
        "Types: deb\nURIs: http://sec.example/debian-security\nSuites: bookworm-security\n"
        "Components: main\n\n"
        "Types: deb\nURIs: http://off.example/x\nSuites: bookworm\nEnabled: no\n\n"
        "Types: deb\nURIs: https://vendor.example/apt\nSuites: cloud-sdk-bookworm\n"
    )
    (apt / "sources.list.d" / "ignored.list.disabled").write_text(
        "deb http://disabled.example bookworm main\n"
    )
    assert host_apt_sources("bookworm", apt) == [
        "deb http://m.example/debian bookworm main",
        "deb http://m.example/debian bookworm main contrib",
        "deb http://m.example/debian bookworm-updates main contrib",
        "deb http://sec.example/debian-security bookworm-security main",
    ]
    assert host_apt_sources("trixie", apt) == []


def test_mirror_flag_replaces_host_config() -> None:
    assert apt_sources("bookworm", "http://mirror.example/debian") == [
        "deb http://mirror.example/debian bookworm main",
        "deb http://mirror.example/debian bookworm-updates main",
    ]
    with pytest.raises(ImageError, match="--mirror 'ftp://x'"):
        apt_sources("bookworm", "ftp://x")


def test_find_image_is_none_before_a_build(tmp_path: Path) -> None:
    assert find_image("base", tmp_path) is None
    with pytest.raises(ImageError, match="deskloop image build base"):
        require_image("base", tmp_path)


def test_a_cached_build_of_this_recipe_is_made_current_not_rebuilt(
    tmp_path: Path, recipes: Path
) -> None:
    # Two branches with different recipes share one cache: the other's build of gimp
    # is current, this recipe's build is still in the cache under its own hash.
    wanted = recipe_hash(get_recipe("gimp", recipes), recipes)
    images = tmp_path / "images"
    for digest in (wanted, "0" * 64):
        folder = images / f"gimp-{digest[:12]}"
        folder.mkdir(parents=True)
        for name in ("disk.qcow2", "vmlinuz", "initrd.img"):
            (folder / name).write_bytes(b"x")
        manifest = {"name": "gimp", "recipe_hash": digest, "dir": folder.name}
        (folder / "manifest.json").write_text(json.dumps(manifest))
    (images / "gimp.json").write_text((images / f"gimp-{'0' * 12}" / "manifest.json").read_text())
    lines: list[str] = []
    image = build_image("gimp", cache=tmp_path, recipes=recipes, progress=lines.append)
    assert image.recipe_hash == wanted and image.dir.name == f"gimp-{wanted[:12]}"
    assert find_image("gimp", tmp_path) == image
    assert "is in the cache; made it current" in lines[0]
    assert (images / f"gimp-{'0' * 12}").is_dir()  # the other build is left alone


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            digest.update(chunk)
    return digest.hexdigest()


@pytest.mark.desktop
@pytest.mark.timeout(1800)  # CI builds from scratch: minutes of apt on a loaded machine
def test_base_image_builds_with_manifest_and_is_cached() -> None:
    """Builds `base` (minutes without the cache), then proves the cache: a second
    build returns the same image without touching it."""
    lines: list[str] = []
    image = build_image("base", progress=lines.append)
    assert image.disk.is_file() and image.kernel.is_file() and image.initrd.is_file()
    if "[1/4] layer base: building ..." in lines:
        # Built just now: the progress inside the stage was read from mmdebstrap's
        # output, a line per step (not per package) through the callback.
        for step in ("downloading", "installing"):
            assert any(re.fullmatch(rf"\[1/4\] layer base: {step} \d+ packages", x) for x in lines)
        assert len(lines) < 60, lines
    if not any("up to date" in line for line in lines):
        assert "[3/4] filesystem: converting to qcow2" in lines
    manifest = json.loads((image.dir / "manifest.json").read_text())
    assert manifest == image.manifest
    assert manifest["recipe_hash"] == recipe_hash(get_recipe("base"))
    assert manifest["disk_bytes"] == image.disk.stat().st_size
    assert manifest["disk_sha256"] == _sha256(image.disk)
    assert manifest["build_seconds"] > 0
    packages = manifest["packages"]
    for name in read_packages("base"):
        assert packages.get(name), f"{name} missing from the manifest"
    assert all(line.startswith("deb ") for line in manifest["sources"])
    # The session user has no way to root (test_the_session_user_gets_no_sudo).
    assert not {"sudo", "doas", "opendoas"} & set(packages)

    mtime = image.disk.stat().st_mtime_ns
    again: list[str] = []
    second = build_image("base", progress=again.append)
    assert second.dir == image.dir
    assert image.disk.stat().st_mtime_ns == mtime
    assert any("up to date" in line for line in again)


@pytest.mark.desktop
@pytest.mark.timeout(1800)
def test_a_build_waits_for_the_cache_build_lock() -> None:
    """A build while another holds the cache's lock (the suite's background builds)
    waits for it, then finds the image the other built instead of building it again."""
    build_image("base")
    lines: list[str] = []
    with build_lock(cache_dir(), "test", print):
        waiter = threading.Thread(target=lambda: build_image("base", progress=lines.append))
        waiter.start()
        deadline = time.monotonic() + 60
        while not any("waiting for another build" in line for line in lines):
            assert time.monotonic() < deadline, lines
            time.sleep(0.05)
        assert waiter.is_alive(), lines
    waiter.join(60)
    assert not waiter.is_alive()
    assert any("up to date" in line for line in lines), lines
