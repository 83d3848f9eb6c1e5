"""Desktops: live graphical sessions an agent can see and drive.

`base` is the contract (`Desktop`, `Guest`); `local` (Xvnc on this host) and `libvirt`
(VMs, a package; with `vm_host` for the host that runs them, `ssh_host` to log in
to a remote one, and `ssh_guest` for their command channel) are the backends; `reaper`
leaves nothing behind; `lab_user` (who) and `sandbox` (where it may write) confine a
local desktop's programs; `liveness` races work against a desktop's death
(`while_alive`); `factory` makes one from backend options; `inventory` lists
what exists and runs `deskloop vm` actions for the TUI; `pass_through` is a desktop
whose input a person already delivered.

May import the RFB client, VM images and core; never tasks, the episode loop or above.
"""

import logging

# paramiko's transport thread logs every failed SSH attempt with its traceback ("Error
# reading SSH protocol banner" while a guest boots). With no handler of the lab's,
# Python's last-resort handler printed them on stderr, over bench output and the TUI.
# Our connect loops retry and report what failed themselves; a handler the lab
# configures (on the root logger) still receives the records.
logging.getLogger("paramiko.transport").addHandler(logging.NullHandler())
