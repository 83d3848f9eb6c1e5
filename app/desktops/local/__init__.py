"""The local backend: Xvnc and openbox on this host, one throw-away HOME per session.

- `desktop`: `LocalDesktop`, the `Desktop` a session is reset into and closed out of;
- `session`: one session's folder, HOME, bus, Xvnc, openbox and VNC connection;
- `guest`: its command and file channel (`LocalGuest`), confined to the HOME;
- `xvnc`: Xvnc's side files and start-up (password file, X authority, free port);
  `bare_xvnc`: an Xvnc alone, for the live RFB tests and benchmarks;
- `lab_user` (who runs the programs) and `sandbox` (bubblewrap: where they may write);
- `reaper`: nothing left behind, a watchdog run by path (`python -I reaper.py`), so it
  imports the standard library and `app.core.procfs` only;
- `watch`: the integrity watch, `exec_trace` (every program started) and `write_watch`
  (who last wrote a file).

May import the shared modules above it (`base`, `lifecycle`, `vnc_screen`) and `web` (a
local guest shows web pages); never `remote` or `libvirt` (an import-linter contract
holds it).
"""
