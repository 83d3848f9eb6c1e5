#!/usr/bin/env bash
# The README's first command: set up, then run the GIMP demo tasks with their
# reference solutions on the local desktop backend and print the score table.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/deskloop demo "$@"
