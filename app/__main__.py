"""`python -m app ...`: the `deskloop` command, for a checkout without the console script."""

import sys

from app.cli import main

sys.exit(main())
