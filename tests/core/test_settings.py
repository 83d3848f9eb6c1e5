"""DESKLOOP_* settings: read and checked in app/core/settings.py alone, each refused
with its name when it cannot be used, and each documented in docs/configuration.md."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from app.core.settings import NAMES, SETTINGS, SettingError, read_settings

ROOT = Path(__file__).resolve().parents[2]
# Set by DeskLoop for its own children, not by a person (the local desktop's markers).
OWN_MARKERS = {
    "DESKLOOP_DESKTOP",
    "DESKLOOP_OWNER_PID",
    "DESKLOOP_OWNER_START",
    "DESKLOOP_SESSION_DIR",
}


def test_values_are_parsed_and_unset_or_blank_ones_are_none(tmp_path: Path) -> None:
    given = read_settings(
        {
            "DESKLOOP_DB": "~/lab.db",
            "DESKLOOP_CACHE": str(tmp_path),
            "DESKLOOP_VIRT_TYPE": " QEMU ",
            "DESKLOOP_VM_VCPUS": "4",
            "DESKLOOP_BOOT_TIMEOUT": "900",
            "DESKLOOP_TIME_SCALE": "",
            "DESKLOOP_GRAPHICS": "Sixel",
            "DESKLOOP_IMAGE": "  ",
        }
    )
    assert given.db == Path("~/lab.db").expanduser() and given.cache == tmp_path
    assert given.virt_type == "qemu" and given.vm_vcpus == 4 and given.boot_timeout == 900.0
    assert given.graphics == "sixel"
    assert given.time_scale is None and given.image is None and given.libvirt_uri is None
    empty = read_settings({})
    assert (empty.db, empty.cache, empty.graphics, empty.libvirt_uris) == (None, None, None, "")


@pytest.mark.parametrize(
    ("name", "raw", "why"),
    [
        ("DESKLOOP_VIRT_TYPE", "xen", "expected one of kvm, qemu"),
        ("DESKLOOP_VM_VCPUS", "two", "expected a whole number"),
        ("DESKLOOP_VM_VCPUS", "0", "must be at least 1"),
        ("DESKLOOP_BOOT_TIMEOUT", "soon", "expected a number"),
        ("DESKLOOP_TIME_SCALE", "-1", "must be positive"),
        ("DESKLOOP_TIME_SCALE", "nan", "must be positive"),
        ("DESKLOOP_GRAPHICS", "vga", "expected one of auto, kitty, sixel, halfblock"),
    ],
)
def test_a_value_that_cannot_be_used_is_refused_by_name(name: str, raw: str, why: str) -> None:
    settings = read_settings({name: raw, "DESKLOOP_IMAGE": "gimp"})
    assert settings.image == "gimp"  # the others are still read
    attribute = name.removeprefix("DESKLOOP_").lower()
    with pytest.raises(SettingError) as caught:
        getattr(settings, attribute)
    assert f"${name}={raw!r}" in str(caught.value) and why in str(caught.value)
    assert caught.value.kind == "other"  # never retried as if the desktop had failed


def test_the_task_cache_is_on_off_or_a_folder(tmp_path: Path) -> None:
    def folder(**env: str) -> Path | None:
        return read_settings(env).task_cache

    assert folder(DESKLOOP_CACHE=str(tmp_path)) == tmp_path / "tasks"
    assert folder(DESKLOOP_CACHE=str(tmp_path), DESKLOOP_TASK_CACHE="on") == tmp_path / "tasks"
    assert folder(XDG_CACHE_HOME=str(tmp_path)) == tmp_path / "deskloop" / "tasks"
    for off in ("off", "OFF", "0", "no", "false"):
        assert folder(DESKLOOP_TASK_CACHE=off) is None
    assert folder(DESKLOOP_TASK_CACHE=str(tmp_path / "mine")) == tmp_path / "mine"


def test_the_process_environment_is_read_at_each_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DESKLOOP_IMAGE", "blender")
    assert read_settings().image == "blender"
    monkeypatch.setenv("DESKLOOP_IMAGE", "kdenlive")
    assert read_settings().image == "kdenlive"


def settings_read_in(path: Path) -> list[str]:
    """DESKLOOP_* names a module looks up in an environment: `environ.get(NAME)`,
    `environ[NAME]`, `getenv(NAME)`, with NAME a literal or a module constant."""
    tree = ast.parse(path.read_text(), str(path))
    constants = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
        if isinstance(target, ast.Name) and isinstance(node.value.value, str)
    }

    def name_of(key: ast.expr) -> str | None:
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return key.value
        if isinstance(key, ast.Name):
            return constants.get(key.id)
        return None

    def is_environ(node: ast.expr) -> bool:
        return (isinstance(node, ast.Name) and node.id in ("environ", "env")) or (
            isinstance(node, ast.Attribute) and node.attr == "environ"
        )

    keys: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and is_environ(node.value):
            keys.append(node.slice)
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            if isinstance(func, ast.Attribute) and (
                (func.attr in ("get", "pop", "setdefault") and is_environ(func.value))
                or func.attr == "getenv"
            ):
                keys.append(node.args[0])
    found = (name_of(key) for key in keys)
    return sorted(n for n in found if n and n.startswith("DESKLOOP_") and n not in OWN_MARKERS)


def test_no_module_but_the_settings_reads_a_setting_from_the_environment() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted((ROOT / "app").rglob("*.py"))
        if path != ROOT / "app" / "core" / "settings.py"
        for name in settings_read_in(path)
    ]
    assert not offenders, offenders


def test_the_reading_check_sees_each_way_of_reading(tmp_path: Path) -> None:
    module = tmp_path / "reader.py"
    module.write_text(
        "import os\nNAME = 'DESKLOOP_A'\n"
        "a = os.environ.get(NAME)\nb = os.environ['DESKLOOP_B']\nc = os.getenv('DESKLOOP_C')\n"
        "d = os.environ.get('HOME')\ne = os.environ.get('DESKLOOP_DESKTOP')\n"
    )
    assert settings_read_in(module) == ["DESKLOOP_A", "DESKLOOP_B", "DESKLOOP_C"]


def test_every_setting_is_documented_and_every_documented_one_exists() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text()
    documented = set(re.findall(r"^\| `(DESKLOOP_[A-Z_]+)` \|", page, re.MULTILINE))
    assert documented == NAMES
    for setting in SETTINGS:
        row = next(line for line in page.splitlines() if line.startswith(f"| `{setting.name}` |"))
        assert setting.meaning in row and setting.default in row, setting.name
