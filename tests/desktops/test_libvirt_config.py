"""LibvirtConfig's choices that need no VM: time scale under emulation, which URIs are
local, and how a remote URI is reached over SSH."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.core.errors import DesktopError
from app.core.settings import SettingError
from app.desktops.libvirt import TCG_TIME_SCALE, LibvirtConfig, LibvirtDesktop
from app.desktops.libvirt.host import is_local_uri
from app.desktops.remote.ssh_host import SshTarget


def test_waits_stretch_under_software_emulation_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DESKLOOP_TIME_SCALE", raising=False)
    config = LibvirtConfig()
    assert config.scale_for("qemu") == TCG_TIME_SCALE > 1
    assert config.scale_for("kvm") == 1.0


def test_time_scale_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DESKLOOP_TIME_SCALE", "5")
    assert LibvirtConfig().scale_for("qemu") == 5.0
    assert LibvirtConfig(time_scale=1.5).scale_for("kvm") == 1.5


@pytest.mark.parametrize("raw", ["fast", "0", "-2"])
def test_a_bad_time_scale_names_the_variable(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("DESKLOOP_TIME_SCALE", raw)
    with pytest.raises(SettingError, match=r"\$DESKLOOP_TIME_SCALE="):
        LibvirtConfig()


@pytest.mark.parametrize(
    ("uri", "local"),
    [
        ("qemu:///system", True),
        ("qemu+unix:///system", True),
        ("qemu:///session", True),
        ("qemu+ssh://lab-host/system", False),
        ("qemu+ssh://root@10.0.0.5/system", False),
    ],
)
def test_which_uris_are_on_this_host(uri: str, local: bool) -> None:
    assert is_local_uri(uri) is local


def test_an_ssh_uri_names_user_port_key_and_host_key_check(tmp_path: Path) -> None:
    uri = (
        "qemu+ssh://lab@gpu-7.example:2222/system"
        "?keyfile=/keys/lab%20key&known_hosts=/etc/lab/known&no_verify=0"
    )
    target = SshTarget.from_uri(uri, ssh_config=tmp_path / "absent")
    assert target == SshTarget(
        host="gpu-7.example",
        port=2222,
        user="lab",
        keyfile="/keys/lab key",
        known_hosts="/etc/lab/known",
        verify=True,
    )
    assert target.label == "lab@gpu-7.example:2222"


@pytest.mark.parametrize(
    "query", ["no_verify=1", "known_hosts_verify=ignore", "known_hosts_verify=auto"]
)
def test_a_uri_can_skip_the_host_key_check_as_libvirt_does(tmp_path: Path, query: str) -> None:
    target = SshTarget.from_uri(f"qemu+libssh://h/system?{query}", ssh_config=tmp_path / "x")
    assert target.verify is False
    assert target.port == 22


def test_ssh_config_fills_what_the_uri_leaves_out(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text(
        "Host lab\n  HostName 10.1.2.3\n  User ops\n  Port 2200\n"
        "  IdentityFile ~/.ssh/lab_ed25519\n"
    )
    target = SshTarget.from_uri("qemu+ssh://lab/system", ssh_config=config)
    assert (target.host, target.user, target.port) == ("10.1.2.3", "ops", 2200)
    assert target.keyfile == str(Path("~/.ssh/lab_ed25519").expanduser())
    # What the URI says wins over the config.
    explicit = SshTarget.from_uri("qemu+ssh://me@lab:22/system?keyfile=/k", ssh_config=config)
    assert (explicit.user, explicit.port, explicit.keyfile) == ("me", 22, "/k")


@pytest.mark.parametrize("uri", ["qemu+tcp://lab/system", "qemu+tls://lab/system"])
def test_a_remote_uri_without_ssh_is_refused_with_the_fix(uri: str) -> None:
    with pytest.raises(DesktopError, match=r"qemu\+ssh://HOST/system"):
        SshTarget.from_uri(uri)


async def test_a_desktop_is_used_only_at_the_uri_it_was_made_at(tmp_path: Path) -> None:
    folder = tmp_path / "vms" / "lab-1"
    folder.mkdir(parents=True)
    record = {
        "name": "lab-1", "image": "base", "image_dir": "/x", "recipe_hash": "r",
        "mac": "52:54:00:00:00:01", "vnc_password": "pw", "width": 1280, "height": 800,
        "memory_mib": 1024, "vcpus": 2, "virt_type": "qemu", "created": 0.0,
        "uri": "qemu+ssh://lab2/system", "host_dir": "/srv/deskloop/vms/lab-1",
    }  # fmt: skip
    (folder / "vm.json").write_text(json.dumps(record))
    desktop = LibvirtDesktop(
        name="lab-1", config=LibvirtConfig(uri="qemu:///system", cache=tmp_path)
    )
    with pytest.raises(DesktopError, match=r"lives at qemu\+ssh://lab2/system, not qemu:///"):
        await desktop.create()
    assert json.loads((folder / "vm.json").read_text()) == record  # nothing rewritten
