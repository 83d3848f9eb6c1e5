#!/usr/bin/env bash
# The README's second command: set up, then lint, type-check and run the whole
# test suite, real desktop and VM tests included. Exits non-zero if anything fails.
#
# Time (docs/testing.md): the VM images are built in the background from the start,
# while lint, type checks and the tests that need no image run; the suite runs on
# pytest-xdist workers ($DESKLOOP_TEST_WORKERS, 3 by default: one for the VM tests, which
# tests/suite_plugin.py keeps together, two for the rest, whose tests mostly wait).
# Every step, image build, test and slow fixture is timed into
# sessions/suite-times/last.jsonl (the run before stays as previous.jsonl);
# `bench/bench_suite.py` prints it as tables, or compares two runs.
set -euo pipefail
cd "$(dirname "$0")/.."

times_dir=sessions/suite-times
mkdir -p "$times_dir"
if [ -f "$times_dir/last.jsonl" ]; then mv "$times_dir/last.jsonl" "$times_dir/previous.jsonl"; fi
export DESKLOOP_SUITE_TIMES="$PWD/$times_dir/last.jsonl"
: >"$DESKLOOP_SUITE_TIMES"

# One timing record: note KIND NAME SECONDS [OK]
note() {
  local ok=""
  if [ $# -ge 4 ]; then ok=", \"ok\": $4"; fi
  printf '{"kind": "%s", "name": "%s", "s": %s, "t": %s%s}\n' \
    "$1" "$2" "$3" "$(date +%s.%N)" "$ok" >>"$DESKLOOP_SUITE_TIMES"
}
# Seconds since a `date +%s.%N` reading.
since() { awk -v t0="$1" -v now="$(date +%s.%N)" 'BEGIN { printf "%.1f", now - t0 }'; }
note step start 0

# --tests: also the packages only the tests need (openssh-server; setup.sh says why).
t0=$(date +%s.%N)
bash scripts/setup.sh --tests
note step setup "$(since "$t0")"

# The images of tests/vm/, in the order those tests want them. Each waits on the
# cache's build lock, so a test that gets to an image first builds it and this
# finds it done. Root only (mmdebstrap); without root the VM tests say why.
build_log="$times_dir/image-builds.log"
: >"$build_log"
build_images() {
  local image t ok
  for image in base gimp web kdenlive blender; do
    t=$(date +%s.%N)
    ok=true
    .venv/bin/deskloop image build "$image" >>"$build_log" 2>&1 || ok=false
    note image_build "$image" "$(since "$t")" "$ok"
  done
}
builds_pid=""
if [ "$(id -u)" -eq 0 ]; then
  echo "== VM images: building in the background (log: $build_log)"
  build_images &
  builds_pid=$!
fi
stop_builds() {
  if [ -n "$builds_pid" ]; then
    pkill -TERM -P "$builds_pid" 2>/dev/null || true
    kill "$builds_pid" 2>/dev/null || true
  fi
}
trap stop_builds EXIT

t0=$(date +%s.%N)
echo "== ruff"
.venv/bin/ruff check app tests bench scripts
echo "== mypy"
.venv/bin/mypy
echo "== import contracts (the floors of docs/architecture.md)"
.venv/bin/lint-imports
note step lint "$(since "$t0")"
echo "== services"
# libvirtd and virtlogd for the VM tests (no systemd on our machines).
bash scripts/services.sh
echo "== pytest"
t0=$(date +%s.%N)
set +e
.venv/bin/pytest -n "${DESKLOOP_TEST_WORKERS:-3}" "$@"
code=$?
set -e
note step pytest "$(since "$t0")"
if [ -n "$builds_pid" ]; then
  wait "$builds_pid" || true
  builds_pid=""
  if grep -q '"ok": false' "$DESKLOOP_SUITE_TIMES"; then
    echo "an image build failed; the end of $build_log:" >&2
    tail -n 30 "$build_log" >&2
  fi
fi
if [ "$code" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure here" >&2
  exit 1
fi
exit "$code"
