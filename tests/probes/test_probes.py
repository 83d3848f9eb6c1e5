"""Probers run real tools in a real desktop's guest; every declared probe kind exists."""

from __future__ import annotations

import time

import pytest

from app.checks.base import Probe
from app.checks.registry import REGISTRY
from app.desktops.local.desktop import LocalDesktop
from app.probes import ANSWER_PROBERS, PROBERS, gather_probe


def test_every_probe_kind_a_check_declares_has_a_prober() -> None:
    declared = {kind for spec in REGISTRY.values() for kind, _ in spec.probe_fields}
    known = set(PROBERS) | set(ANSWER_PROBERS)
    assert declared <= known, f"missing probers: {declared - known}"


@pytest.mark.desktop
async def test_stat_probe_reads_size_and_mtime_and_reports_missing() -> None:
    async with LocalDesktop() as desktop:
        await desktop.reset()
        before = time.time()
        await desktop.guest.write_file("~/Desktop/out.txt", b"12345")
        found = await gather_probe(desktop.guest, Probe("stat", "~/Desktop/out.txt"))
        assert found.error is None
        assert found.data["size"] == 5 and found.data["type"] == "regular file"
        assert before - 1 <= found.data["mtime"] <= time.time() + 1
        missing = await gather_probe(desktop.guest, Probe("stat", "~/Desktop/none.txt"))
        assert missing.data is None and missing.error == "not found" and missing.missing
        unknown = await gather_probe(desktop.guest, Probe("nope", "~/x"))
        assert unknown.error is not None and "no prober for 'nope'" in unknown.error
