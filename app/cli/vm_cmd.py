"""`deskloop vm ...` (libvirt desktops) and `deskloop image ...` (VM images)."""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from app.cli.common import run_async
from app.core.errors import DesktopError
from app.metrics.tables import print_table


def _say(text: str) -> None:
    print(text, flush=True)


def _config(args: argparse.Namespace) -> Any:
    from app.desktops.libvirt import LibvirtConfig

    config = LibvirtConfig()
    if getattr(args, "uri", None):
        config.uri = args.uri
    if getattr(args, "virt_type", None):
        config.virt_type = args.virt_type
    return config


def _desktop(args: argparse.Namespace, **kwargs: Any) -> Any:
    from app.desktops.libvirt import LibvirtDesktop

    return LibvirtDesktop(name=args.name, config=_config(args), progress=_say, **kwargs)


def _print_endpoint(desktop: Any) -> None:
    info = desktop.info()
    print(f"{desktop.domain_name}: {info.state} · {info.details.get('virt', '')}")
    if info.vnc is not None:
        print(f"  VNC      {info.vnc.host}:{info.vnc.port}  password {info.vnc.password}")
    if "host" in info.details:
        print(f"  host     {info.details['host']} (VNC forwarded here while this command runs)")
    if "ip" in info.details:
        print(f"  SSH      user@{info.details['ip']} (the lab's key only)")
    if desktop.timings:
        print("  timings  " + ", ".join(f"{k} {v:.1f} s" for k, v in desktop.timings.items()))


# ---------------------------------------------------------------- vm


def cmd_vm_list(args: argparse.Namespace) -> int:
    from app.desktops.libvirt import detect_virt_type, list_vms

    config = _config(args)
    vms = list_vms(config)
    print_table(
        ["name", "domain", "state", "image", "start states"],
        [[v.name, v.domain, v.state, v.image, str(len(v.states))] for v in vms],
    )
    if config.local:
        virt, why = detect_virt_type()
        print(f"\nvirtualization here: {virt} ({why})")
    else:
        print(f"\nlibvirt host: {config.uri}")
    return 0


def cmd_vm_create(args: argparse.Namespace) -> int:
    width, height = _size(args.size)
    desktop = _desktop(args, image=args.image, width=width, height=height)
    if args.memory:
        desktop.config.memory_mib = args.memory
    if args.vcpus:
        desktop.config.vcpus = args.vcpus

    async def go() -> None:
        await desktop.create()
        print(f"defined {desktop.domain_name} (image {desktop.image_name}, {width}x{height})")
        print(f"virtualization: {desktop.virt_type} ({desktop.virt_reason})")
        print(f"files: {desktop.dir}")

    run_async(go())
    return 0


def cmd_vm_start(args: argparse.Namespace) -> int:
    desktop = _desktop(args)

    async def go() -> None:
        t0 = time.monotonic()
        await desktop.reset()
        print(f"started in {time.monotonic() - t0:.1f} s")
        _print_endpoint(desktop)

    run_async(go())
    return 0


def cmd_vm_stop(args: argparse.Namespace) -> int:
    desktop = _desktop(args)
    run_async(desktop.stop())
    print(f"stopped {desktop.domain_name}")
    return 0


def cmd_vm_rm(args: argparse.Namespace) -> int:
    desktop = _desktop(args)
    if not desktop.dir.exists() and not _domain_exists(desktop.config.uri, desktop.domain_name):
        raise DesktopError(f"no desktop {args.name} (see `deskloop vm list`)")
    run_async(desktop.remove())
    print(f"removed {desktop.domain_name}: domain, overlay, start states and {desktop.dir}")
    return 0


def _domain_exists(uri: str, domain: str) -> bool:
    from app.desktops.libvirt import open_connection

    conn = open_connection(uri)
    try:
        return domain in {d.name() for d in conn.listAllDomains()}
    finally:
        conn.close()


def cmd_vm_snapshot(args: argparse.Namespace) -> int:
    desktop = _desktop(args)

    async def go() -> None:
        state = await desktop.save_running(args.key)
        print(f"saved start state {state.key} of {desktop.domain_name} in {state.dir}")
        _print_endpoint(desktop)

    run_async(go())
    return 0


def cmd_vm_revert(args: argparse.Namespace) -> int:
    desktop = _desktop(args)

    async def go() -> None:
        t0 = time.monotonic()
        await desktop.restore_state(args.key)
        print(f"restored start state {args.key} in {time.monotonic() - t0:.1f} s")
        _print_endpoint(desktop)

    run_async(go())
    return 0


VIEWERS = ("vncviewer", "xtigervncviewer", "xvncviewer", "remote-viewer", "gvncviewer")


def cmd_vm_view(args: argparse.Namespace) -> int:
    from app.desktops.libvirt import reach_vnc

    config = _config(args)
    viewer = None if args.print_only else next((v for v in VIEWERS if shutil.which(v)), None)
    with reach_vnc(args.name, config) as endpoint:
        if viewer is not None:
            return _launch_viewer(viewer, endpoint)
        print(f"VNC address  {endpoint.host}:{endpoint.port}")
        print(f"password     {endpoint.password}")
        if not args.print_only:
            print(f"(no VNC viewer found: install one of {', '.join(VIEWERS)})")
        if not config.local:
            # A remote desktop's VNC is reachable here only through this process.
            print("forwarding over SSH; press Ctrl-C to stop", flush=True)
            # SIGTERM ends the forward as Ctrl-C does: a shell starts a background job
            # with SIGINT ignored, so a script (or a test) that started it stops it so.
            stop = threading.Event()
            signal.signal(signal.SIGTERM, lambda *_: stop.set())
            with contextlib.suppress(KeyboardInterrupt):
                # A timed wait, not a bare one: a signal may be delivered to another
                # thread (the forward's), and Python runs its handler, which ends this
                # wait, only when the main thread next wakes.
                while not stop.wait(0.5):
                    pass
        return 0


def _launch_viewer(viewer: str, endpoint: Any) -> int:
    from app.rfb.wire import vnc_password_file_bytes

    address = f"{endpoint.host}:{endpoint.port}"
    if viewer in ("remote-viewer", "gvncviewer"):
        # These take the password interactively; show it before they ask.
        print(f"password: {endpoint.password}")
        target = f"vnc://{address}" if viewer == "remote-viewer" else address
        return subprocess.call([viewer, target])
    # TigerVNC-style viewers read a VNC password file: keep it private and brief.
    with tempfile.TemporaryDirectory(prefix="deskloop-view-") as tmp:
        passwd = Path(tmp) / "passwd"
        passwd.write_bytes(vnc_password_file_bytes(endpoint.password))
        passwd.chmod(0o600)
        return subprocess.call(
            [viewer, "-passwd", str(passwd), f"{endpoint.host}::{endpoint.port}"]
        )


def _size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise DesktopError(f"--size {text!r}: expected WIDTHxHEIGHT, e.g. 1280x800") from None
    return width, height


# ---------------------------------------------------------------- image


def cmd_image_build(args: argparse.Namespace) -> int:
    from app.vmimages.builder import build_image
    from app.vmimages.progress import BuildReport, LiveReport

    t0 = time.monotonic()

    def progress(text: str) -> None:
        print(f"[{time.monotonic() - t0:6.0f} s] {text}", flush=True)

    # A terminal gets a live bar inside each step; a pipe or a log a line per step.
    report = LiveReport(progress) if sys.stdout.isatty() else BuildReport(progress)
    with report:
        image = build_image(args.name, mirror=args.mirror, force=args.force, progress=report)
    print(f"image {image.name}: {image.disk}")
    print(f"manifest: {image.dir / 'manifest.json'}")
    return 0


def cmd_image_list(args: argparse.Namespace) -> int:
    from app.vmimages.cache import cache_dir, find_image
    from app.vmimages.recipes import load_recipes, recipe_hash

    rows = []
    for name, recipe in load_recipes().items():
        image = find_image(name)
        if image is None:
            status, size, built = "not built", "", ""
        else:
            current = image.recipe_hash == recipe_hash(recipe)
            status = "built" if current else "outdated (recipe changed)"
            size = f"{image.manifest['disk_bytes'] / 2**20:.0f} MiB"
            built = str(image.manifest.get("built_at", ""))
        rows.append([name, " + ".join(recipe.layers), status, size, built])
    print_table(["image", "layers", "status", "qcow2", "built"], rows)
    print(f"\ncache: {cache_dir()}")
    return 0


def cmd_image_show(args: argparse.Namespace) -> int:
    from app.vmimages.cache import require_image

    image = require_image(args.name)
    manifest = dict(image.manifest)
    if args.json:
        print(json.dumps(manifest, indent=2))
        return 0
    packages = manifest.pop("packages", {})
    for key, value in manifest.items():
        print(f"{key:<16} {value}")
    print(f"{'packages':<16} {len(packages)}")
    if args.packages:
        for name in sorted(packages):
            print(f"  {name} {packages[name]}")
    return 0


def cmd_image_diff(args: argparse.Namespace) -> int:
    from app.vmimages.compare import diff_lines, diff_manifests, load_manifest

    label_a, a = load_manifest(args.a)
    label_b, b = load_manifest(args.b)
    diff = diff_manifests(a, b)
    print(f"A: {label_a}\nB: {label_b}")
    for line in diff_lines(diff):
        print(line)
    # Like diff(1): 0 when the packages agree, 1 when they differ, so a script can ask.
    return 0 if diff.same_packages else 1


def cmd_image_rm(args: argparse.Namespace) -> int:
    from app.vmimages.cache import remove_image

    if remove_image(args.name):
        print(f"removed image {args.name} (its layers stay cached)")
    else:
        print(f"image {args.name} was not built")
    return 0


def register(sub: Any) -> None:
    vm = sub.add_parser(
        "vm",
        help="libvirt VM desktops: list, create, start, stop, rm, snapshot, revert, view",
        description="Manage libvirt desktops (domains named deskloop-NAME). The connection "
        "URI comes from $DESKLOOP_LIBVIRT_URI (default qemu:///system); KVM or software "
        "emulation is chosen at run time ($DESKLOOP_VIRT_TYPE overrides).",
    )
    vsub = vm.add_subparsers(dest="vm_command", metavar="ACTION", required=True)

    def named(name: str, help_text: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = vsub.add_parser(name, help=help_text)
        parser.add_argument("name", help="desktop name (domain deskloop-NAME)")
        parser.add_argument("--uri", help="libvirt URI, e.g. qemu+ssh://host/system")
        return parser

    listing = vsub.add_parser("list", help="every DeskLoop desktop and its state")
    listing.add_argument("--uri", help="libvirt URI, e.g. qemu+ssh://host/system")
    listing.set_defaults(func=cmd_vm_list)
    create = named("create", "define a desktop from an image (no boot)")
    create.add_argument("--image", default="base", help="image name (default: base)")
    create.add_argument("--size", default="1280x800", help="screen size (default 1280x800)")
    create.add_argument("--memory", type=int, help="MiB of guest memory (default: the image's)")
    create.add_argument("--vcpus", type=int, help="virtual CPUs (default 2)")
    create.add_argument("--virt-type", choices=["kvm", "qemu"], help="override KVM/TCG choice")
    create.set_defaults(func=cmd_vm_create)
    named("start", "boot, or restore the boot state; prints VNC address").set_defaults(
        func=cmd_vm_start
    )
    named("stop", "power off (start states stay)").set_defaults(func=cmd_vm_stop)
    named("rm", "delete the domain, its overlay, start states and files").set_defaults(
        func=cmd_vm_rm
    )
    snap = named("snapshot", "save the running desktop (memory + disk) as a start state")
    snap.add_argument("key", nargs="?", default="manual", help="state name (default manual)")
    snap.set_defaults(func=cmd_vm_snapshot)
    revert = named("revert", "restore a saved start state")
    revert.add_argument("key", nargs="?", default="boot", help="state name (default boot)")
    revert.set_defaults(func=cmd_vm_revert)
    view = named("view", "open a VNC viewer on the desktop, or print address and password")
    view.add_argument("--print", dest="print_only", action="store_true", help="only print")
    view.set_defaults(func=cmd_vm_view)

    image = sub.add_parser(
        "image",
        help="VM images built from vm_images/ recipes",
        description="Build and inspect VM images. Images live in $DESKLOOP_CACHE "
        "(default ~/.cache/deskloop), never in git.",
    )
    isub = image.add_subparsers(dest="image_command", metavar="ACTION", required=True)
    build = isub.add_parser("build", help="build an image (cached layers are reused)")
    build.add_argument("name", help="base, gimp, blender, kdenlive, web or studio")
    build.add_argument("--mirror", help="Debian mirror URL (default: this host's apt sources)")
    build.add_argument("--force", action="store_true", help="rebuild even if up to date")
    build.set_defaults(func=cmd_image_build)
    isub.add_parser("list", help="recipes and what is built").set_defaults(func=cmd_image_list)
    show = isub.add_parser("show", help="an image's manifest")
    show.add_argument("name")
    show.add_argument("--json", action="store_true", help="the whole manifest as JSON")
    show.add_argument(
        "--packages", action="store_true", help="also every installed package and version"
    )
    show.set_defaults(func=cmd_image_show)
    diff = isub.add_parser(
        "diff",
        help="compare two builds' packages and versions",
        description="Compare two image builds by their manifests. A and B are image names "
        "(the current build) or paths to a build folder or a kept manifest.json. "
        "Exit status 0 when the packages agree, 1 when they differ.",
    )
    diff.add_argument("a", metavar="A")
    diff.add_argument("b", metavar="B")
    diff.set_defaults(func=cmd_image_diff)
    rm = isub.add_parser("rm", help="delete an image's builds (layers stay cached)")
    rm.add_argument("name")
    rm.set_defaults(func=cmd_image_rm)
