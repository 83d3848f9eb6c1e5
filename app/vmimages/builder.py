"""VM images built from the recipes in `vm_images/`: layers, cache, manifest.

An image is a Debian root filesystem made of *layers* (package lists in
`vm_images/layers/`, stacked as `vm_images/images.yaml` says), then configured
(`vm_images/files/` copied in, `vm_images/configure.sh` run inside it) and turned
into an ext4 qcow2 disk plus the kernel and initrd beside it for direct kernel
boot. Nothing is downloaded but Debian packages.

Caching: each layer is stored as a tarball keyed by the hash of its package list
and of every layer below it; an image is keyed by its layers' hashes plus the
configure stage's files. A second build with an unchanged recipe does nothing;
editing `layers/gimp.txt` rebuilds the gimp layer and the images above it, never
the base system. Everything lives in the cache directory (`$DESKLOOP_CACHE`, else
`~/.cache/deskloop`), outside git:

    layers/<layer>-<hash>.tar       a root filesystem after that layer
    images/<name>-<hash>/           disk.qcow2, vmlinuz, initrd.img, manifest.json, build.log
    images/<name>.json              the manifest of the current build of <name>

Builds need root (mmdebstrap in root mode, chroot, mounts in a private mount
namespace so nothing is mounted on the host afterwards) and network access to the
Debian mirror, which is read from this host's apt configuration unless given.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from app.vmimages.cache import Image, cache_dir, find_image, images_dir_of, remove_tree
from app.vmimages.progress import (
    AptOutput,
    BuildReport,
    OutputWatch,
    Pieces,
    ProgressCallback,
    QemuImgOutput,
    StepUpdate,
)
from app.vmimages.recipes import (
    MANIFEST_VERSION,
    RECIPES_DIR,
    ImageError,
    Recipe,
    apt_sources,
    get_recipe,
    layer_hashes,
    read_packages,
    recipe_hash,
)

# Free space left in the guest's filesystem beyond what the packages use: room for
# task files, app caches and exports.
FREE_SPACE_MIB = 1536

# Left out of every layer by dpkg: a guest never reads them, and they are a third
# of a minimal system's files.
_DPKG_EXCLUDES = (
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/info/*",
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
)

# ---------------------------------------------------------------- building

# Runs a command chrooted into $1 inside a private mount namespace (unshare -m),
# with its own /proc and a minimal /dev (never the host's /dev: FIELD_NOTES, a
# package script once changed the host's /dev/kvm through a bind mount). The
# mounts disappear with the namespace, however the build ends.
_CHROOT_SH = r"""
set -eu
root=$1; shift
mount --make-rprivate /
mount -t proc proc "$root/proc"
mount -t tmpfs -o mode=0755,size=16m dev "$root/dev"
for spec in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
  IFS=: read -r name major minor <<EOF_SPEC
$spec
EOF_SPEC
  mknod -m 0666 "$root/dev/$name" c "$major" "$minor"
done
mkdir -p "$root/dev/pts" "$root/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts"
ln -s pts/ptmx "$root/dev/ptmx"
mount -t tmpfs tmpfs "$root/dev/shm"
exec chroot "$root" "$@"
"""


class _Builder:
    def __init__(
        self,
        recipe: Recipe,
        cache: Path,
        recipes: Path,
        sources: list[str],
        report: BuildReport,
        log_path: Path,
    ) -> None:
        self.recipe = recipe
        self.cache = cache
        self.recipes = recipes
        self.sources = sources
        self.report = report
        self.log_path = log_path
        self.stage = ""
        """The stage being built ('[1/4] layer base'): its commands are its steps."""

    def log(self, text: str) -> None:
        with open(self.log_path, "a") as log:
            log.write(text.rstrip("\n") + "\n")

    def sh(self, argv: list[str], what: str, watch: OutputWatch | None = None) -> None:
        """Run a build command as the step `what` of the current stage, its output
        appended to the build log; `watch` reads that output as it comes, for the
        progress inside the step."""
        self.log(f"$ {' '.join(argv)}")
        self.report.update(self.stage, StepUpdate(what))
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C.UTF-8"}
        with (
            open(self.log_path, "ab") as log,
            subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log if watch is None else subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=env,
            ) as proc,
        ):
            try:
                if watch is not None:
                    assert proc.stdout is not None
                    self._follow(proc.stdout, log, watch)
                code = proc.wait()
            except BaseException:
                proc.kill()  # as subprocess.run does: no build command outlives a ^C
                raise
        if code != 0:
            raise ImageError(
                f"image {self.recipe.name}: {self.stage}: {what} failed (exit {code}); "
                f"last lines of {self.log_path}:\n{_tail(self.log_path)}"
            )

    def _follow(self, output: IO[bytes], log: IO[bytes], watch: OutputWatch) -> None:
        """Copy a command's output to the log as it comes, and report its progress."""
        pieces = Pieces()
        while True:
            data = os.read(output.fileno(), 1 << 16)
            log.write(data)
            for piece in pieces.feed(data) if data else pieces.end():
                if (update := watch.feed(piece)) is not None:
                    self.report.update(self.stage, update)
            if not data:
                return

    def chroot(
        self, root: Path, argv: list[str], what: str, watch: OutputWatch | None = None
    ) -> None:
        self.sh(
            ["unshare", "--mount", "--", "sh", "-c", _CHROOT_SH, "sh", str(root), *argv],
            what,
            watch,
        )

    def extract(self, tarball: Path, root: Path) -> None:
        self.sh(
            ["tar", "--numeric-owner", "--xattrs", "--xattrs-include=*", "-xpf", str(tarball),
             "-C", str(root)],
            f"unpacking {tarball.name}",
        )  # fmt: skip

    def pack(self, root: Path, tarball: Path) -> None:
        partial = tarball.with_suffix(".tar.partial")
        self.sh(
            ["tar", "--numeric-owner", "--xattrs", "--xattrs-include=*", "-cf", str(partial),
             "-C", str(root), "."],
            f"packing {tarball.name}",
        )  # fmt: skip
        partial.rename(tarball)

    def base_layer(self, layer: str, out: Path) -> None:
        packages = read_packages(layer, self.recipes)
        partial = out.with_suffix(".tar.partial")
        argv = [
            "mmdebstrap",
            # apt's and dpkg's own output, a line per package as it happens: the
            # build log gets it, and AptOutput reads the progress from it (mmdebstrap
            # draws its own bars only on a terminal, which the log is not).
            "--verbose",
            "--mode=root",
            "--variant=apt",
            "--format=tar",
            f"--include={','.join(packages)}",
            '--aptopt=Acquire::Languages "none"',
            '--aptopt=APT::Install-Recommends "false"',
            *(f"--dpkgopt={opt}" for opt in _DPKG_EXCLUDES),
            self.recipe.suite,
            str(partial),
            *self.sources,
        ]
        what = f"mmdebstrap {self.recipe.suite} ({len(packages)} packages listed)"
        self.sh(argv, what, AptOutput())
        partial.rename(out)

    def app_layer(self, layer: str, parent: Path, out: Path, work: Path) -> None:
        root = work / f"layer-{layer}"
        root.mkdir()
        self.extract(parent, root)
        # The same sources as the base layer, even if it was built from another mirror.
        (root / "etc/apt/sources.list").write_text("\n".join(self.sources) + "\n")
        _write_resolv_conf(root)
        # Services must not start inside the build chroot.
        policy = root / "usr/sbin/policy-rc.d"
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
        packages = read_packages(layer, self.recipes)
        self.chroot(root, ["apt-get", "update", "-q"], "apt-get update")
        self.chroot(
            root,
            ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages],
            f"apt-get install ({len(packages)} packages listed)",
            AptOutput(),
        )
        self.chroot(root, ["apt-get", "clean"], "apt-get clean")
        policy.unlink()
        self.pack(root, out)
        shutil.rmtree(root)


def _write_resolv_conf(root: Path) -> None:
    target = root / "etc/resolv.conf"
    with contextlib.suppress(OSError):
        if target.is_symlink() or target.exists():
            target.unlink()
        target.write_bytes(Path("/etc/resolv.conf").read_bytes())


def _tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _du_bytes(root: Path) -> int:
    out = subprocess.run(
        ["du", "-s", "-B1", "-x", str(root)], capture_output=True, text=True, check=True
    ).stdout
    return int(out.split()[0])


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(4 * 1024 * 1024), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _installed_packages(root: Path) -> dict[str, str]:
    out = subprocess.run(
        ["dpkg-query", f"--admindir={root / 'var/lib/dpkg'}", "-W", "-f",
         "${Package}\t${Version}\t${db:Status-Abbrev}\n"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    packages = {}
    for line in out.splitlines():
        name, version, status = ([*line.split("\t"), "", ""])[:3]
        if status.startswith("ii"):
            packages[name] = version
    return packages


def _newest(root: Path, pattern: str) -> Path:
    found = sorted((root / "boot").glob(pattern))
    if not found:
        raise ImageError(f"no /boot/{pattern} in the image: is linux-image-amd64 in a layer?")
    return found[-1]


def _point_to(images_dir: Path, name: str, manifest: dict[str, Any]) -> None:
    """Make the build `manifest` describes the current one of `name` (atomically)."""
    pointer = images_dir / f"{name}.json"
    partial = pointer.with_suffix(".json.partial")
    partial.write_text(json.dumps(manifest, indent=2) + "\n")
    partial.rename(pointer)


def _cached_build(cache: Path, name: str, wanted: str) -> Image | None:
    """The complete build of recipe hash `wanted` in the cache, made current; None
    when there is none."""
    images_dir = images_dir_of(cache)
    folder = images_dir / f"{name}-{wanted[:12]}"
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        return None
    image = Image(name, folder, manifest)
    if manifest.get("recipe_hash") != wanted or not (
        image.disk.is_file() and image.kernel.is_file() and image.initrd.is_file()
    ):
        return None
    _point_to(images_dir, name, manifest)
    return find_image(name, cache)


def build_image(
    name: str,
    *,
    mirror: str | None = None,
    cache: Path | None = None,
    recipes: Path = RECIPES_DIR,
    force: bool = False,
    progress: ProgressCallback | BuildReport | None = None,
) -> Image:
    """Build image `name` (blocking; minutes), reusing cached layers; return it.

    With an unchanged recipe and `force=False` the existing build is returned at once.
    `progress` gets a line per stage and per step of a stage (a callback), or the
    steps' progress too (a `BuildReport`, such as a live terminal one).

    Raises:
        ImageError: bad recipe, no mirror, not root, or a build step failed (the
            message has the end of the build log).
    """
    report = progress if isinstance(progress, BuildReport) else BuildReport(progress)
    cache = cache or cache_dir()
    with build_lock(cache, name, report.line):
        return _build_image(name, mirror, cache, recipes, force, report)


@contextlib.contextmanager
def build_lock(cache: Path, name: str, say: ProgressCallback) -> Iterator[None]:
    """Hold the cache's build lock: one build at a time per cache, across processes.

    The test suite builds images in the background while tests that need them wait
    here, and two images share their base layer; without the lock both would build
    it. The waiter then finds the image up to date. Two builds at once would only
    share the same cores and disk anyway.
    """
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / "build.lock", "a+b") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"image {name}: waiting for another build in {cache} to finish")
            t0 = time.monotonic()
            fcntl.flock(lock, fcntl.LOCK_EX)
            say(f"image {name}: the other build finished after {time.monotonic() - t0:.0f} s")
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _build_image(
    name: str,
    mirror: str | None,
    cache: Path,
    recipes: Path,
    force: bool,
    report: BuildReport,
) -> Image:
    say = report.line
    recipe = get_recipe(name, recipes)
    wanted = recipe_hash(recipe, recipes)
    existing = find_image(name, cache)
    if existing is not None and existing.recipe_hash == wanted and not force:
        say(f"image {name} is up to date ({existing.dir}); nothing to build")
        return existing
    kept = None if force else _cached_build(cache, name, wanted)
    if kept is not None:
        # Another recipe's build is current (a branch with other layers built it):
        # this recipe's own build is still in the cache, keyed by its hash.
        say(f"image {name}: this recipe's build {kept.dir} is in the cache; made it current")
        return kept
    if os.geteuid() != 0:
        raise ImageError(
            "building an image needs root (mmdebstrap, chroot and mounts in a private "
            "namespace); run `sudo deskloop image build ...`"
        )
    for tool in ("mmdebstrap", "mke2fs", "qemu-img", "unshare", "tar"):
        if shutil.which(tool) is None:
            raise ImageError(f"{tool} is not installed; run scripts/setup.sh")
    sources = apt_sources(recipe.suite, mirror)
    layers = layer_hashes(recipe, recipes)
    stages = len(layers) + 3
    layer_dir = cache / "layers"
    images_dir = images_dir_of(cache)
    layer_dir.mkdir(parents=True, exist_ok=True)
    images_dir.mkdir(parents=True, exist_ok=True)
    out_dir = images_dir / f"{name}-{wanted[:12]}"
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"build-{name}-", dir=cache) as tmp:
        work = Path(tmp)
        log_path = work / "build.log"
        builder = _Builder(recipe, cache, recipes, sources, report, log_path)
        say(f"image {name}: layers {' + '.join(recipe.layers)}; sources: {'; '.join(sources)}")
        layer_records = []
        parent: Path | None = None
        for index, (layer, digest) in enumerate(layers, 1):
            tarball = layer_dir / f"{layer}-{digest[:16]}.tar"
            stage = builder.stage = f"[{index}/{stages}] layer {layer}"
            t0 = time.monotonic()
            if tarball.is_file():
                say(f"{stage}: cached ({tarball.name})")
                built = False
            else:
                say(f"{stage}: building ...")
                if parent is None:
                    builder.base_layer(layer, tarball)
                else:
                    builder.app_layer(layer, parent, tarball, work)
                say(f"{stage}: built in {time.monotonic() - t0:.0f} s")
                built = True
            layer_records.append({"name": layer, "hash": digest, "built_now": built})
            parent = tarball
        assert parent is not None

        stage = builder.stage = f"[{len(layers) + 1}/{stages}] configure"
        say(f"{stage}: files/, configure.sh, kernel trim, initrd ...")
        t0 = time.monotonic()
        root = work / "rootfs"
        root.mkdir()
        builder.extract(parent, root)
        builder.sh(
            ["cp", "-a", "--no-preserve=ownership", f"{recipes / 'files'}/.", str(root)],
            "copying vm_images/files",
        )
        shutil.copy2(recipes / "configure.sh", root / "tmp/deskloop-configure.sh")
        builder.chroot(root, ["/bin/sh", "/tmp/deskloop-configure.sh"], "configure.sh")
        (root / "tmp/deskloop-configure.sh").unlink()
        packages = _installed_packages(root)
        say(f"{stage}: done in {time.monotonic() - t0:.0f} s ({len(packages)} packages)")

        stage = builder.stage = f"[{len(layers) + 2}/{stages}] filesystem"
        t0 = time.monotonic()
        staging = work / "image"
        staging.mkdir()
        shutil.copy2(_newest(root, "vmlinuz-*"), staging / "vmlinuz")
        shutil.copy2(_newest(root, "initrd.img-*"), staging / "initrd.img")
        used = _du_bytes(root)
        size_mib = int(used * 1.15 / 2**20) + FREE_SPACE_MIB
        raw = work / "disk.raw"
        builder.sh(
            ["mke2fs", "-q", "-t", "ext4", "-L", "deskloop-root", "-E",
             "root_owner=0:0", "-d", str(root), str(raw), f"{size_mib}M"],
            "making the ext4 filesystem (mke2fs -d)",
        )  # fmt: skip
        shutil.rmtree(root)
        converting = "converting to qcow2"
        builder.sh(
            ["qemu-img", "convert", "-p", "-f", "raw", "-O", "qcow2", str(raw),
             str(staging / "disk.qcow2")],
            converting,
            QemuImgOutput(converting),
        )  # fmt: skip
        raw.unlink()
        say(f"{stage}: {size_mib} MiB ext4 → qcow2 in {time.monotonic() - t0:.0f} s")

        stage = builder.stage = f"[{stages}/{stages}] manifest"
        disk = staging / "disk.qcow2"
        manifest: dict[str, Any] = {
            "manifest_version": MANIFEST_VERSION,
            "name": name,
            "recipe_hash": wanted,
            "dir": out_dir.name,
            "suite": recipe.suite,
            "sources": sources,
            "layers": layer_records,
            "memory_mib": recipe.memory_mib,
            "filesystem_mib": size_mib,
            "used_bytes": used,
            "disk_bytes": disk.stat().st_size,
            "disk_sha256": _sha256_file(disk),
            "kernel_sha256": _sha256_file(staging / "vmlinuz"),
            "initrd_sha256": _sha256_file(staging / "initrd.img"),
            "build_seconds": round(time.monotonic() - started, 1),
            "built_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "packages": packages,
        }
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        shutil.copy2(log_path, staging / "build.log")
        for path in staging.iterdir():
            path.chmod(0o444)
        if out_dir.exists():
            remove_tree(out_dir)
        staging.rename(out_dir)
        _point_to(images_dir, name, manifest)
        say(
            f"{stage}: {out_dir / 'manifest.json'} · {len(packages)} packages · "
            f"{manifest['disk_bytes'] / 2**20:.0f} MiB qcow2 · built in "
            f"{manifest['build_seconds']:.0f} s"
        )
    image = find_image(name, cache)
    assert image is not None
    return image
