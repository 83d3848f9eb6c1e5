"""`python -m app.desktops.libvirt ACTION NAME [KEY]`: one `deskloop vm` action with
its reports on a structured channel (see `actions`)."""

import sys

from app.desktops.libvirt.actions import main

sys.exit(main())
