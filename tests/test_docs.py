"""Generated documentation stays in step with the code it describes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import app.checks  # noqa: F401  (registers every check)
from app.checks.registry import REGISTRY

ROOT = Path(__file__).resolve().parent.parent


def test_evaluators_page_matches_the_registry() -> None:
    out = subprocess.run(
        [sys.executable, "scripts/gen_evaluators_doc.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_registered_check_is_documented_with_every_parameter() -> None:
    page = (ROOT / "docs" / "evaluators.md").read_text()
    for name, spec in REGISTRY.items():
        assert f"### `{name}`" in page, name
        for field, info in spec.params.model_fields.items():
            # A task file writes a field by its alias where it has one.
            written = info.alias or field
            assert f"| `{written}` |" in page, f"{name}.{written}"
