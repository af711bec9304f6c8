#!/usr/bin/env bash
# `npm test` runs this, then every benchmark once at a small size (package.json). Here: build and lint
# side by side (lint reads the sources, not dist/), then the two test lanes one after the other: the
# main lane (ava, two at a time) and the serial lane (HA and cloud bootstraps, and the never-two-leaders
# test, whose elections and timers want the machine to themselves). Each step prints how long it took,
# so CI's time can be kept in view lane by lane.
set -euo pipefail
cd "$(dirname "$0")/.."

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
timed "serial lane" npx ava --serial --concurrency=1 "${SERIAL_LANE[@]}"
echo "[npm test] build, lint and tests took $SECONDS s"
