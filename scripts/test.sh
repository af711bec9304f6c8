#!/usr/bin/env bash
# `npm test` runs this. Here: build and lint side by side (lint reads the sources, not dist/), then the
# main lane (ava, two files at a time), then the serial lane (HA and cloud bootstraps, and the
# never-two-leaders test: one test at a time, their elections and timers never beside each other) with
# the benchmark smoke beside it in two lanes (every benchmark once at a small size, so none rots; most
# of both is waiting on leases and SSH, and one after the other they took 12 of CI's 31 minutes). The
# smoke's output is printed whole after the serial lane's. Each step prints how long it took, so CI's
# time can be kept in view lane by lane.
set -euo pipefail
cd "$(dirname "$0")/.."

# The benchmark smoke's command comes from package.json's `test` script (its arguments), so that it
# says there what `npm test` runs.
BENCH_SMOKE=("$@")
if [ "${#BENCH_SMOKE[@]}" -eq 0 ]; then
  echo "usage: scripts/test.sh BENCHMARK-SMOKE-COMMAND... (npm test passes node dist/bench/run.js --smoke)" >&2
  exit 2
fi

SERIAL_LANE=(dist/test/ha.test.js dist/test/cloud-replicas.test.js dist/test/aws-bootstrap.test.js
  dist/test/vsphere-bootstrap.test.js dist/test/upgrade-ha.test.js dist/test/leadership-ssh.test.js)

timed() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "[npm test] $name took $((SECONDS - start)) s"
}

lint_log=$(mktemp)
trap 'rm -f "$lint_log"' EXIT
start=$SECONDS
npm run --silent lint > "$lint_log" 2>&1 &
lint_pid=$!
if ! timed build npm run --silent build; then
  wait "$lint_pid" || true
  exit 1
fi
lint_status=0
wait "$lint_pid" || lint_status=$?
cat "$lint_log"
if [ "$lint_status" -ne 0 ]; then
  echo "[npm test] lint failed" >&2
  exit "$lint_status"
fi
echo "[npm test] build and lint took $((SECONDS - start)) s"

timed "main lane" npx ava

bench_log=$(mktemp)
trap 'rm -f "$lint_log" "$bench_log"' EXIT
start=$SECONDS
BENCH_SMOKE_LANES=2 "${BENCH_SMOKE[@]}" > "$bench_log" 2>&1 &
bench_pid=$!
serial_status=0
# Each of these builds a cluster before its first test ends, beside the benchmark smoke: ava's inactivity
# timeout of the main lane (120 s) cut ha.test.js off on a loaded machine with nothing wrong.
timed "serial lane" npx ava --serial --concurrency=1 --timeout=10m "${SERIAL_LANE[@]}" || serial_status=$?
bench_status=0
wait "$bench_pid" || bench_status=$?
cat "$bench_log"
echo "[npm test] serial lane and benchmark smoke took $((SECONDS - start)) s"
if [ "$serial_status" -ne 0 ] || [ "$bench_status" -ne 0 ]; then
  echo "[npm test] failed: serial lane exit $serial_status, benchmark smoke exit $bench_status" >&2
  exit 1
fi
echo "[npm test] build, lint, tests and benchmark smoke took $SECONDS s"
