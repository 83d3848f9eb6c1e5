#!/usr/bin/env bash
# Set up everything DeskLoop needs on a Debian 12 machine: system packages (apt)
# and a virtualenv with the Python dependencies. Safe to run again: it installs
# only what is missing.
#
# `scripts/setup.sh --tests` (or DESKLOOP_SETUP_TESTS=1) also installs
# TEST_APT_PACKAGES, which only the test suite needs; scripts/test.sh calls it so.
set -euo pipefail
cd "$(dirname "$0")/.."

with_tests="${DESKLOOP_SETUP_TESTS:-0}"
for arg in "$@"; do
  case "$arg" in
    --tests) with_tests=1 ;;
    *) echo "setup: unknown argument: $arg (the only one is --tests)" >&2; exit 2 ;;
  esac
done

APT_PACKAGES=(
  python3 python3-venv python3-pip          # the interpreter and venv
  tigervnc-standalone-server tigervnc-tools # Xvnc: the local desktop's X + VNC server
  openbox                                   # a light window manager
  xdotool x11-utils                         # window queries (titles, classes; xprop)
  dbus                                      # a D-Bus session bus per desktop (GIMP, Kdenlive)
  xterm                                     # a tiny X client the desktop tests drive
  gimp librsvg2-common                      # GIMP; librsvg2-common renders its SVG icons
  fonts-dejavu-core                         # fonts for the apps
  blender                                   # Blender (GUI and background mode)
  kdenlive frei0r-plugins mediainfo         # Kdenlive; without frei0r/mediainfo it shows a blocking dialog
  chromium                                  # web desktops: kiosk Chromium on a task's page (CDP over a pipe)
  melt ffmpeg espeak-ng                     # MLT renderer, ffprobe, speech for generated clips
  libgl1-mesa-dri mesa-utils                # software OpenGL (llvmpipe) for Blender and Kdenlive
  qemu-system-x86 qemu-utils                # VMs under KVM or TCG
  libvirt-daemon-system libvirt-dev pkg-config  # libvirt (and headers for libvirt-python)
  mmdebstrap e2fsprogs openssh-client       # building VM images; SSH to guests
  dnsmasq-base                              # DHCP on the isolated libvirt network of VM desktops
  dnsmasq-utils                             # dhcp_release: a removed desktop gives its lease back
  procps                                    # pgrep/ps, used by tests and cleanup
  bubblewrap                                # bwrap: the local desktop's sandbox (home-only writes)
  strace                                    # the exec trace behind the integrity flags (app/desktops/local/exec_trace.py)
  novnc websockify                          # the TUI's browser viewer (o); noVNC is also the participant view's desktop
)

# Only for the tests, never a user's plain setup.
TEST_APT_PACKAGES=(
  openssh-server    # tests/sshd.py runs its own sshd on 127.0.0.1 for the remote libvirt tests
  python3-tk        # the Tk window the live VNC input tests drive (Debian's python3 lacks tkinter)
)

installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

wanted=("${APT_PACKAGES[@]}")
if [ "$with_tests" = 1 ]; then wanted+=("${TEST_APT_PACKAGES[@]}"); fi
missing=()
for pkg in "${wanted[@]}"; do
  if ! installed "$pkg"; then missing+=("$pkg"); fi
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
new_sshd=0
for pkg in "${missing[@]}"; do
  if [ "$pkg" = openssh-server ]; then new_sshd=1; fi
done
# Debian's openssh-server starts and enables a system sshd on 0.0.0.0:22 as soon as it
# is installed. The tests only want the binary (each runs its own sshd on 127.0.0.1),
# so a machine set up for tests must not gain a login service on every interface.
# A policy-rc.d that exits 101 forbids invoke-rc.d/deb-systemd-invoke to start any
# service during the install; ours is made only where none exists (Docker images ship
# one) and removed on any exit, failures included. A user's own, already installed
# sshd is never touched.
policy=/usr/sbin/policy-rc.d
own_policy=0
remove_policy() {
  if [ "$own_policy" = 1 ]; then $SUDO rm -f "$policy"; fi
}
if [ "$new_sshd" = 1 ] && [ ! -e "$policy" ]; then
  own_policy=1
  trap remove_policy EXIT
  # An untrapped signal would end bash without running the EXIT trap.
  trap 'exit 130' INT TERM HUP
  printf '#!/bin/sh\n# deskloop setup.sh: no service starts during this install\nexit 101\n' \
    | $SUDO tee "$policy" >/dev/null
  $SUDO chmod 0755 "$policy"
fi

if ((${#missing[@]})); then
  echo "setup: installing system packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ "$new_sshd" = 1 ]; then
  remove_policy
  own_policy=0
  # Not starting it is not enough on a systemd machine: the postinst enabled the
  # units, so sshd would listen after the next boot. systemctl disable also works
  # offline (it only edits symlinks); where it cannot, there is nothing to disable.
  if command -v systemctl >/dev/null 2>&1; then
    $SUDO systemctl disable ssh.service ssh.socket >/dev/null 2>&1 || true
  fi
  # On a sysvinit machine the postinst enabled /etc/init.d/ssh instead.
  if [ ! -d /run/systemd/system ] && command -v update-rc.d >/dev/null 2>&1; then
    $SUDO update-rc.d ssh disable >/dev/null 2>&1 || true
  fi
  echo "setup: installed openssh-server for the tests; no system sshd is started or enabled"
fi

# The unprivileged user local desktops run as when DeskLoop runs as root.
scripts/lab_user.sh

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
# Reinstall only when pyproject.toml changed since the last successful install.
stamp=.venv/.deskloop-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "setup: installing Python dependencies into .venv"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[dev]'
  touch "$stamp"
fi
echo "setup: ready"
