"""LibvirtConfig's choices that need no VM: time scale under emulation, local URIs."""

from __future__ import annotations

import pytest

from app.desktops.libvirt import TCG_TIME_SCALE, LibvirtConfig, _is_local
from app.errors import DesktopError


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
    with pytest.raises(DesktopError, match=r"\$DESKLOOP_TIME_SCALE="):
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
    assert _is_local(uri) is local
