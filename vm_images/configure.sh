#!/bin/sh
# The last stage of every image, run inside the image's root filesystem (chroot)
# after the layers are installed and files/ is copied in. Everything that makes a
# Debian root filesystem a DeskLoop guest lives here or in files/.
set -eu

# The session user (uid 1000). It has no password: SSH with the lab's key only.
if ! id user >/dev/null 2>&1; then
  useradd --create-home --uid 1000 --shell /bin/bash user
fi
passwd -d user >/dev/null 2>&1 || true
passwd -l root >/dev/null

echo deskloop >/etc/hostname
printf '127.0.0.1 localhost\n127.0.1.1 deskloop\n' >/etc/hosts
printf '/dev/vda / ext4 rw,noatime,errors=remount-ro 0 1\n' >/etc/fstab

# Empty (not missing): systemd makes a new id at first boot, so every clone gets
# its own DHCP lease.
: >/etc/machine-id
rm -f /var/lib/dbus/machine-id
# No host keys in the image: deskloop-firstboot makes them per clone.
rm -f /etc/ssh/ssh_host_*

systemctl enable systemd-networkd.service deskloop-firstboot.service \
  deskloop-xserver.service deskloop-session.service deskloop-watch.service \
  deskloop-writes.service >/dev/null 2>&1
# Debian's own accounting (acct.service, to /var/log/account, root-only, rotated by
# cron) is replaced by deskloop-watch's log, readable by the session user.
systemctl disable acct.service >/dev/null 2>&1 || true
systemctl mask acct.service >/dev/null 2>&1 || true
# A quiet guest: no timers waking up the (emulated) CPU, no login prompt on the screen.
for unit in apt-daily.timer apt-daily-upgrade.timer man-db.timer e2scrub_all.timer \
  fstrim.timer dpkg-db-backup.timer getty@tty1.service systemd-networkd-wait-online.service; do
  systemctl mask "$unit" >/dev/null 2>&1 || true
done
systemctl set-default multi-user.target >/dev/null

# Trim what a guest never uses: hardware drivers, docs, translations, caches.
for kdir in /lib/modules/*; do
  [ -d "$kdir" ] || continue
  for sub in sound drivers/media drivers/net/wireless drivers/net/ethernet drivers/infiniband \
    drivers/staging drivers/isdn drivers/bluetooth drivers/gpu/drm/amd drivers/gpu/drm/nouveau \
    drivers/gpu/drm/i915 drivers/gpu/drm/radeon drivers/iio drivers/usb/serial drivers/scsi/qla2xxx \
    drivers/scsi/lpfc drivers/net/can drivers/mtd net/bluetooth net/wireless net/mac80211 \
    fs/btrfs fs/xfs fs/ocfs2 fs/gfs2 fs/nfs fs/nfsd fs/ceph fs/smb fs/f2fs; do
    rm -rf "$kdir/kernel/$sub"
  done
  depmod -a "$(basename "$kdir")"
done
update-initramfs -u -k all >/dev/null 2>&1
rm -rf /usr/share/doc/* /usr/share/man/* /usr/share/info/* /var/cache/apt/* /var/lib/apt/lists/*
find /usr/share/locale -mindepth 1 -maxdepth 1 ! -name 'en*' ! -name locale.alias -exec rm -rf {} +
rm -f /etc/ssh/ssh_host_*
