"""The floors of docs/architecture.md hold: import-linter's contracts pass on the tree,
and fail, naming the import, when an upward import or a Textual import is added (outside
app.ui, or in app.ui's headless services)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports over the `app` package found in `root`, with the repo's contracts."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    """A copy of the `app` package that a test may break."""
    shutil.copytree(ROOT / "app", tmp_path / "app", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def add_import(module: Path, line: str) -> None:
    text = module.read_text()
    head, sep, rest = text.partition("from __future__ import annotations\n")
    assert sep, f"{module} has no __future__ import to put the new import after"
    module.write_text(head + sep + line + "\n" + rest)


def test_the_tree_keeps_its_floors(tree_copy: Path) -> None:
    out = lint_imports(tree_copy)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout


def test_an_upward_import_breaks_the_floors(tree_copy: Path) -> None:
    # The store (floor 1) reaching up to the desktops (floor 2), as it once did.
    add_import(tree_copy / "app/store/schema.py", "from app.desktops.local import reaper  # noqa")
    out = lint_imports(tree_copy)
    assert out.returncode != 0
    assert "Floors: each layer imports only the layers below it BROKEN" in out.stdout
    assert "app.store.schema -> app.desktops.local.reaper" in out.stdout


def test_siblings_on_one_floor_stay_apart(tree_copy: Path) -> None:
    add_import(tree_copy / "app/users/simulated.py", "import app.agents.null  # noqa")
    out = lint_imports(tree_copy)
    assert out.returncode != 0
    assert "app.users.simulated -> app.agents.null" in out.stdout


def test_the_endpoint_client_stays_below_agents_and_users(tree_copy: Path) -> None:
    # The client is shared by agents and users only because neither is above it.
    add_import(tree_copy / "app/endpoints/client.py", "import app.users.simulated  # noqa")
    out = lint_imports(tree_copy)
    assert out.returncode != 0
    assert "app.endpoints.client -> app.users.simulated" in out.stdout


def test_textual_outside_the_ui_breaks_a_contract(tree_copy: Path) -> None:
    add_import(tree_copy / "app/episode/runner.py", "import textual  # noqa")
    out = lint_imports(tree_copy)
    assert out.returncode != 0
    assert "Textual only in app.ui BROKEN" in out.stdout


def test_textual_in_a_tui_service_breaks_a_contract(tree_copy: Path) -> None:
    add_import(tree_copy / "app/ui/services/episode.py", "import textual  # noqa")
    out = lint_imports(tree_copy)
    assert out.returncode != 0
    assert "No Textual in app.ui's services BROKEN" in out.stdout
    assert "app.ui.services.episode -> textual" in out.stdout


def test_a_tui_service_cannot_reach_textual_through_a_screen_module(tree_copy: Path) -> None:
    add_import(tree_copy / "app/ui/services/desktops.py", "import app.ui.modals  # noqa")
    out = lint_imports(tree_copy)
    assert out.returncode != 0
    assert "No Textual in app.ui's services BROKEN" in out.stdout
    assert "app.ui.services.desktops -> app.ui.modals" in out.stdout


def test_ray_outside_its_module_breaks_a_contract(tree_copy: Path) -> None:
    # Ray is a large import: the batch runner reaches it only through app.batch.ray_nodes.
    add_import(tree_copy / "app/batch/runner.py", "import ray  # noqa")
    out = lint_imports(tree_copy)
    assert out.returncode != 0
    assert "Ray only in app.batch.ray_nodes BROKEN" in out.stdout


def test_the_desktop_backends_stay_apart(tree_copy: Path) -> None:
    # A VM's guest channel reaching into the local backend's sandbox.
    add_import(
        tree_copy / "app/desktops/remote/ssh_guest.py", "import app.desktops.local.sandbox  # noqa"
    )
    out = lint_imports(tree_copy)
    assert out.returncode != 0
    assert "Desktop backends stay apart BROKEN" in out.stdout
    assert "app.desktops.remote.ssh_guest -> app.desktops.local.sandbox" in out.stdout


def _sources(name: str) -> set[str]:
    """The source modules import-linter's contract `name` lists."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    contract = next(c for c in contracts if c["name"] == name)
    return {str(module) for module in contract["source_modules"]}


def _packages(folder: Path, prefix: str) -> set[str]:
    return {
        f"{prefix}.{p.stem if p.is_file() else p.name}"
        for p in folder.iterdir()
        if (p.is_dir() and (p / "__init__.py").exists())
        or (p.suffix == ".py" and p.stem not in ("__init__", "__main__"))
    }


def test_the_contracts_listed_by_hand_name_every_package() -> None:
    """The forbidden-import contracts list their sources by hand: a package (or a batch
    module) added later must be in them, or nothing keeps Textual or Ray out of it."""
    app = _packages(ROOT / "app", "app")
    textual = _sources("Textual only in app.ui")
    assert app - {"app.ui"} - textual == set(), "add them to the Textual contract"
    ray = _sources("Ray only in app.batch.ray_nodes")
    batch = _packages(ROOT / "app" / "batch", "app.batch") - {"app.batch.ray_nodes"}
    assert ((app - {"app.batch"}) | batch) - ray == set(), "add them to the Ray contract"
