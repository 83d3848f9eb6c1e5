#!/usr/bin/env bash
# Set up everything DeskLoop needs on a Debian 12 machine: system packages (apt)
# and a virtualenv with the Python dependencies. Safe to run again: it installs
# only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

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
  melt ffmpeg espeak-ng                     # MLT renderer, ffprobe, speech for generated clips
  libgl1-mesa-dri mesa-utils                # software OpenGL (llvmpipe) for Blender and Kdenlive
  qemu-system-x86 qemu-utils                # VMs under KVM or TCG
  libvirt-daemon-system libvirt-dev pkg-config  # libvirt (and headers for libvirt-python)
  mmdebstrap e2fsprogs openssh-client       # building VM images; SSH to guests
  dnsmasq-base                              # DHCP on the isolated libvirt network of VM desktops
  dnsmasq-utils                             # dhcp_release: a removed desktop gives its lease back
  procps                                    # pgrep/ps, used by tests and cleanup
)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if ((${#missing[@]})); then
  echo "setup: installing system packages: ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

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
