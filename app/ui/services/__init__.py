"""The TUI's headless services: what the screens manage, with no Textual import.

`desktops` (this session's desktop pool, the libvirt desktops made elsewhere, the
external viewer), `episode` (an episode started from the TUI, its state fed by the
runner's events), `frame_feed` (the live view's own VNC connection) and `authoring`
(a demonstration recorded, reviewed, drafted and proven from the Author screen).
Screens call them and show their state; everything here is plain asyncio on the
app's loop (blocking calls in threads), so it is tested without a terminal. An
import-linter contract keeps Textual out of this package, even through another
module of `app.ui` (`tests/test_floors.py`).

May import authoring, the episode loop and its composition root, the desktops, the
store, the tasks, the checks, the users, the RFB client and core; never Textual, nor
the screens.
"""
