"""VM images from the recipes in `vm_images/`: the recipes and their hashes (`recipes`),
built images in the cache (`cache`), the builder (`builder`, needs root) and the
progress inside its stages (`progress`: what it reads from apt, dpkg and qemu-img, shown
as lines or as a live rich bar).

May import only `app.core`; the libvirt desktops build on it.
"""
