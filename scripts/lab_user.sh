#!/usr/bin/env bash
# Create the unprivileged system user local desktops run as when DeskLoop runs as
# root (app/desktops/local/lab_user.py): no login shell, no home of its own, a group of
# its own and no other. scripts/setup.sh calls this; safe to run again.
set -euo pipefail

LAB_USER=deskloop-desktop
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

if getent passwd "$LAB_USER" >/dev/null; then
  uid="$(id -u "$LAB_USER")"
  if [ "$uid" -eq 0 ]; then
    echo "lab_user: $LAB_USER exists with uid 0; it must be unprivileged" >&2
    exit 1
  fi
  # An existing user keeps its uid; only extra groups are taken away.
  if [ "$(id -G "$LAB_USER")" != "$(id -g "$LAB_USER")" ]; then
    $SUDO usermod --groups "" "$LAB_USER"
    echo "lab_user: removed the supplementary groups of $LAB_USER"
  fi
else
  $SUDO useradd --system --user-group --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin "$LAB_USER"
  echo "lab_user: created the system user $LAB_USER (local desktops run as it under root)"
fi
