"""Reaching machines over SSH (paramiko): a VM's guest and a remote libvirt host.

- `ssh_guest`: a VM desktop's guest channel (`SSHGuest`: argv commands, SFTP files);
- `ssh_web`: a guest's kiosk Chromium, its DevTools pipe relayed over that channel;
- `ssh_host`: logging in to a remote host and forwarding ports through the login.

Nothing here knows libvirt: the libvirt backend builds on these. May import `web` (the
page contract a guest's browser speaks); never `local` or `libvirt` (an import-linter
contract holds it).
"""
