"""VM images from the recipes in `vm_images/`: the recipes and their hashes (`recipes`),
built images in the cache (`cache`) and the builder (`builder`, needs root).

May import only `app.core`; the libvirt desktops build on it.
"""
