"""Desktops: live graphical sessions an agent can see and drive.

Shared by every backend, here: `base` is the contract (`Desktop`, `Guest` and the
capabilities a desktop may have); `lifecycle` is the reset, close and `async with` that
every backend's desktop shares; `vnc_screen` sees and drives a desktop over its VNC
session; `liveness` races work against a desktop's death (`while_alive`); `xwindows`
lists a guest's windows; `factory` makes a desktop from backend options; `inventory`
lists what exists and runs `deskloop vm` actions for the TUI; `pass_through` is a
desktop whose input a person already delivered.

One subpackage per backend or channel, none importing another except as the
import-linter contract of `pyproject.toml` lets it:

- `local`: Xvnc on this host, its sandbox, lab user, watchdog and integrity watch;
- `libvirt`: VMs, a package of its own (its `host` reaches the machine QEMU runs on);
- `remote`: SSH, to a VM's guest (and a browser in it) and to a remote libvirt host;
  `libvirt` builds on it;
- `web`: kiosk Chromium and the page contract over DevTools, used by `local` and `remote`.

May import the RFB client, VM images and core; never tasks, the episode loop or above.
"""

import logging

# paramiko's transport thread logs every failed SSH attempt with its traceback ("Error
# reading SSH protocol banner" while a guest boots). With no handler of the lab's,
# Python's last-resort handler printed them on stderr, over bench output and the TUI.
# Our connect loops retry and report what failed themselves; a handler the lab
# configures (on the root logger) still receives the records.
logging.getLogger("paramiko.transport").addHandler(logging.NullHandler())
