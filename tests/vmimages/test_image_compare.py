"""`deskloop image show --packages` and `image diff`: two builds compared by manifest.

The manifests here are written by the test in the builder's format (building two real
images takes minutes; `tests/vm/test_images.py` builds one and checks its manifest). The
cache is a temporary folder given through $DESKLOOP_CACHE, as the CLI reads it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli import main
from app.vmimages.compare import diff_manifests


def _manifest(name: str, packages: dict[str, str], **extra: object) -> dict[str, object]:
    return {
        "manifest_version": 1,
        "name": name,
        "recipe_hash": extra.pop("recipe_hash", "aaaa"),
        "dir": f"{name}-aaaa",
        "suite": "bookworm",
        "disk_bytes": extra.pop("disk_bytes", 1000),
        "disk_sha256": extra.pop("disk_sha256", "d1"),
        "kernel_sha256": "k1",
        "initrd_sha256": "i1",
        "built_at": "2026-12-01T00:00:00+00:00",
        "packages": packages,
        **extra,
    }


def _install(cache: Path, manifest: dict[str, object]) -> None:
    """Put a built image into the cache the way builder.py leaves one."""
    images = cache / "images"
    build = images / str(manifest["dir"])
    build.mkdir(parents=True)
    for file in ("disk.qcow2", "vmlinuz", "initrd.img"):
        (build / file).write_bytes(b"x")
    (build / "manifest.json").write_text(json.dumps(manifest))
    (images / f"{manifest['name']}.json").write_text(json.dumps(manifest))


OLD = {"gimp": "2.10.34-1", "libc6": "2.36-9+deb12u7", "xterm": "379-1"}
NEW = {"gimp": "2.10.34-1+deb12u2", "libc6": "2.36-9+deb12u7", "mesa": "22.3.6-1"}


def test_diff_sorts_packages_into_added_removed_and_changed() -> None:
    diff = diff_manifests(_manifest("a", OLD), _manifest("b", NEW, disk_sha256="d2"))
    assert diff.added == {"mesa": "22.3.6-1"}
    assert diff.removed == {"xterm": "379-1"}
    assert diff.changed == {"gimp": ("2.10.34-1", "2.10.34-1+deb12u2")}
    assert diff.fields == {"name": ("a", "b")}
    assert diff.checksums == ("disk_sha256",)
    assert not diff.same_packages
    assert diff_manifests(_manifest("a", OLD), _manifest("a", dict(OLD))).same_packages


def test_image_diff_compares_a_kept_manifest_with_the_current_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("DESKLOOP_CACHE", str(cache))
    kept = tmp_path / "gimp-last-week.json"
    kept.write_text(json.dumps(_manifest("gimp", OLD)))
    _install(cache, _manifest("gimp", NEW, recipe_hash="bbbb"))

    assert main(["image", "diff", str(kept), "gimp"]) == 1
    out = capsys.readouterr().out
    assert f"A: {kept}" in out and "B: gimp (gimp-aaaa)" in out
    assert "recipe_hash      aaaa  ->  bbbb" in out
    assert "packages: 1 added, 1 removed, 1 at another version" in out
    assert "+ mesa 22.3.6-1\n- xterm 379-1\n~ gimp 2.10.34-1 -> 2.10.34-1+deb12u2" in out

    # A build folder names its manifest too; the same packages exit 0.
    assert main(["image", "diff", str(cache / "images" / "gimp-aaaa"), "gimp"]) == 0
    assert "packages: the same names and versions" in capsys.readouterr().out


def test_image_show_lists_every_package_with_its_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DESKLOOP_CACHE", str(tmp_path))
    _install(tmp_path, _manifest("gimp", NEW))
    assert main(["image", "show", "gimp"]) == 0
    assert "packages         3" in capsys.readouterr().out
    assert main(["image", "show", "gimp", "--packages"]) == 0
    out = capsys.readouterr().out
    assert "  gimp 2.10.34-1+deb12u2\n  libc6 2.36-9+deb12u7\n  mesa 22.3.6-1" in out


def test_diff_errors_name_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DESKLOOP_CACHE", str(tmp_path / "cache"))
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "gimp"}')
    assert main(["image", "diff", str(bad), str(tmp_path / "missing.json")]) == 2
    assert f"{bad}: packages: missing" in capsys.readouterr().err
    assert main(["image", "diff", "gimp", "kdenlive"]) == 2
    assert "image 'gimp' is not built" in capsys.readouterr().err
