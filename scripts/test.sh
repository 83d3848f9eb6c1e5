#!/usr/bin/env bash
# The README's second command: set up, then lint, type-check and run the whole
# test suite, real desktop tests included. Exits non-zero if anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
# --tests: also the packages only the tests need (openssh-server; setup.sh says why).
bash scripts/setup.sh --tests
echo "== ruff"
.venv/bin/ruff check app tests bench scripts
echo "== mypy"
.venv/bin/mypy
echo "== import contracts (the floors of docs/architecture.md)"
.venv/bin/lint-imports
echo "== services"
# libvirtd and virtlogd for the VM tests (no systemd on our machines).
bash scripts/services.sh
echo "== pytest"
set +e
.venv/bin/pytest "$@"
code=$?
set -e
if [ "$code" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure here" >&2
  exit 1
fi
exit "$code"
