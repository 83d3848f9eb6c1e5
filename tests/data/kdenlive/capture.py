"""Re-make the Kdenlive test projects with the real Kdenlive GUI (run by hand).

    .venv/bin/python tests/data/kdenlive/capture.py

- inserted.kdenlive: `kdenlive -i harbour.mp4`, accept the profile switch, `v`
  (insert into V1), save. What a user's first edit looks like.
- mix.kdenlive: market (trimmed to leave 10 spare frames at its end) then harbour
  (starting 10 frames in) on V1; harbour selected and mixed with `u`: a same-track
  mix as Kdenlive writes it.
- grouped.kdenlive: a new project made with proxy clips on in Kdenlive's defaults
  (kdenliverc [project] enableproxy, generateproxy, proxyminsize=800), harbour.mp4
  inserted twice into V1 (`v`, two A/V pairs Kdenlive groups itself), the timeline
  selected (`ctrl+a`) and grouped (`ctrl+g`), saved: a user group and proxy settings
  as Kdenlive writes them (tests/checks/test_kdenlive_bin.py).
- showcase.kdenlive: scripts/make_media_assets.py's `showcase()` project opened in
  Kdenlive, a guide added at 3 s ("Harbour"), saved by Kdenlive: effects with
  keyframes, a title, a dissolve, guides, a renamed/locked/muted track as
  Kdenlive itself writes them.
"""

from __future__ import annotations

import asyncio
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT)]

from tests.checks.test_kdenlive import media_assets_script  # noqa: E402

_assets = media_assets_script()
KDENLIVE_ASSETS: Path = _assets.KDENLIVE_ASSETS
Placed = _assets.Placed
ProjectSpec = _assets.ProjectSpec
kdenlive_xml = _assets.kdenlive_xml
showcase = _assets.showcase

from app.core.actions import parse_action  # noqa: E402
from app.desktops.local.desktop import LocalDesktop  # noqa: E402
from app.desktops.xwindows import active_window_title  # noqa: E402

HERE = Path(__file__).resolve().parent


async def _title(desktop: LocalDesktop, pattern: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not re.search(pattern, await active_window_title(desktop.guest)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no window matching {pattern!r}")
        await asyncio.sleep(0.2)


async def _keys(desktop: LocalDesktop, *steps: object) -> None:
    for step in steps:
        await desktop.act(parse_action(step))  # type: ignore[arg-type]
        await asyncio.sleep(0.3)


async def _upload_media(desktop: LocalDesktop) -> None:
    for name in ("harbour.mp4", "market.mp4", "sunset.mp4"):
        await desktop.guest.write_file(f"~/Videos/{name}", (KDENLIVE_ASSETS / name).read_bytes())


async def inserted() -> None:
    async with LocalDesktop() as desktop:
        await desktop.reset()
        await _upload_media(desktop)
        await desktop.guest.launch(["kdenlive", "-i", "~/Videos/harbour.mp4"])
        await _title(desktop, "^Warning")
        await _keys(desktop, {"key": "enter"})
        await _title(desktop, "640x360")
        await _keys(desktop, {"key": "v"}, {"key": "ctrl+s"})
        await _title(desktop, "^Save As")
        await _keys(desktop, {"type": "~/Videos/inserted.kdenlive"}, {"key": "enter"})
        await _title(desktop, "^inserted /")
        data = await desktop.guest.read_file("~/Videos/inserted.kdenlive")
        (HERE / "inserted.kdenlive").write_bytes(data)


KDENLIVERC_PROXY = b"""[project]
enableproxy=true
generateproxy=true
proxyminsize=800
"""


async def grouped() -> None:
    async with LocalDesktop() as desktop:
        await desktop.reset()
        await _upload_media(desktop)
        await desktop.guest.write_file("~/.config/kdenliverc", KDENLIVERC_PROXY)
        await desktop.guest.launch(["kdenlive", "-i", "~/Videos/harbour.mp4"])
        await _title(desktop, "^Warning")
        await _keys(desktop, {"key": "enter"})
        await _title(desktop, "640x360")
        await asyncio.sleep(2)
        await _keys(desktop, {"key": "v"}, {"key": "end"}, {"key": "v"})
        await _keys(desktop, {"key": "ctrl+a"}, {"key": "ctrl+g"}, {"key": "ctrl+s"})
        await _title(desktop, "^Save As")
        await _keys(desktop, {"type": "~/Videos/grouped.kdenlive"}, {"key": "enter"})
        await _title(desktop, "^grouped /")
        data = await desktop.guest.read_file("~/Videos/grouped.kdenlive")
        (HERE / "grouped.kdenlive").write_bytes(data)


async def saved_showcase() -> None:
    async with LocalDesktop() as desktop:
        await desktop.reset()
        await _upload_media(desktop)
        await desktop.guest.write_file("~/Videos/showcase.kdenlive", showcase().encode())
        await desktop.guest.launch(["kdenlive", "~/Videos/showcase.kdenlive"])
        await _title(desktop, "^showcase /")
        await asyncio.sleep(2)
        await _keys(desktop, *([{"key": "shift+right"}] * 3), {"key": "g"})
        await _title(desktop, "^Edit Guide")
        await _keys(desktop, {"type": "Harbour"}, {"key": "enter"})
        await _title(desktop, r"^showcase ?\*")
        await _keys(desktop, {"key": "ctrl+s"})
        await _title(desktop, "^showcase /")
        data = await desktop.guest.read_file("~/Videos/showcase.kdenlive")
        (HERE / "showcase.kdenlive").write_bytes(data)


async def mixed() -> None:
    v1 = [Placed("market.mp4", 0, 0, 65), Placed("harbour.mp4", 65, 10, 90)]
    project = kdenlive_xml(ProjectSpec(video=[v1, []], audio=[[], []]))
    async with LocalDesktop() as desktop:
        await desktop.reset()
        await _upload_media(desktop)
        await desktop.guest.write_file("~/Videos/mix.kdenlive", project.encode())
        await desktop.guest.launch(["kdenlive", "~/Videos/mix.kdenlive"])
        await _title(desktop, "^mix /")
        await asyncio.sleep(2)
        await _keys(desktop, {"click": [437, 650]}, {"key": "u"})
        await _title(desktop, r"^mix ?\*")
        await _keys(desktop, {"key": "ctrl+s"})
        await _title(desktop, "^mix /")
        data = await desktop.guest.read_file("~/Videos/mix.kdenlive")
        (HERE / "mix.kdenlive").write_bytes(data)


if __name__ == "__main__":
    targets = set(sys.argv[1:]) or {"inserted", "showcase", "mix", "grouped"}
    if "grouped" in targets:
        asyncio.run(grouped())
    if "mix" in targets:
        asyncio.run(mixed())
    if "inserted" in targets:
        asyncio.run(inserted())
    if "showcase" in targets:
        asyncio.run(saved_showcase())
    print("wrote", *sorted(p.name for p in HERE.glob("*.kdenlive")))
