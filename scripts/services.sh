#!/usr/bin/env bash
# Start the libvirt daemons the VM backend needs, when nothing else has.
# These machines have no systemd (FIELD_NOTES), so nothing starts them at boot.
# Idempotent: a daemon that already answers is left alone. Needs root (as CI has);
# without root it only reports, since a user session (qemu:///session) needs no daemon.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
  echo "services.sh: not root; skipping virtlogd/libvirtd (use qemu:///session or ask an admin)" >&2
  exit 0
fi
for bin in virtlogd libvirtd; do
  if ! command -v "$bin" >/dev/null 2>&1; then
    echo "services.sh: $bin is not installed (run scripts/setup.sh)" >&2
    exit 1
  fi
done

# libvirt probes QEMU's capabilities as root but then checks /dev/kvm as the QEMU
# user (libvirt-qemu). Where /dev/kvm is root-only (the PVM hosts of FIELD_NOTES),
# the two disagree, the capability cache is never valid, and every domain define
# re-probes QEMU for over a minute. Running QEMU as root makes them agree; each
# DeskLoop domain still sets its own user (the lab's) in its <seclabel>.
conf=/etc/libvirt/qemu.conf
restart=0
if [ -f "$conf" ] && ! grep -q '^# deskloop: QEMU user' "$conf"; then
  {
    echo '# deskloop: QEMU user (scripts/services.sh explains why)'
    echo 'user = "root"'
    echo 'group = "root"'
  } >>"$conf"
  restart=1
fi

running() {
  # A pid file whose process is alive; the daemons write these themselves.
  local pidfile=$1
  [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

if ! running /run/virtlogd.pid; then
  virtlogd -d
fi
if [ "$restart" -eq 1 ] && running /run/libvirtd.pid; then
  # Running domains survive a libvirtd restart; it only rereads its configuration.
  pid=$(cat /run/libvirtd.pid)
  kill "$pid"
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
fi
if ! running /run/libvirtd.pid; then
  libvirtd -d
fi
# Wait until libvirtd answers (bounded): it opens its socket a moment after forking.
for _ in $(seq 1 100); do
  if virsh -c qemu:///system version >/dev/null 2>&1; then
    exit 0
  fi
  sleep 0.1
done
echo "services.sh: libvirtd did not answer on qemu:///system within 10 s" >&2
exit 1
