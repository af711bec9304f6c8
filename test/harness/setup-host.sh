#!/usr/bin/env bash
# Run before the tests (npm's pretest): installs what the SSH test hosts need when it is missing,
# Chromium for the dashboard's browser tests, buildah and a static busybox for the images' test, and
# builds VMware's vSphere simulator (vcsim) from Debian's sources for the vsphere tests.
# Needs root (CI and developer machines of our kind are root); without it, the SSH tests say why
# they cannot run.
set -euo pipefail
need=()
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v etcd >/dev/null || need+=(etcd-server etcd-client)
command -v sudo >/dev/null || need+=(sudo)
command -v ip >/dev/null || need+=(iproute2)
# PostgreSQL 15 for the postgresql operator's tests (test/postgresql.test.ts): the operator's units run it.
[ -x /usr/lib/postgresql/15/bin/postgres ] || need+=(postgresql-15)
[ -x /usr/bin/chromium ] || need+=(chromium)
# The container images (test/images.test.ts): buildah builds them (chroot isolation, vfs: no runtime
# or daemon needed), the agent image's /bin/sh is a static busybox, and the test pushes them to a
# docker-registry of its own on loopback (the package's service, where one starts, is not used).
command -v buildah >/dev/null || need+=(buildah)
command -v docker-registry >/dev/null || need+=(docker-registry)
{ [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1; } || need+=(busybox-static)
# vcsim: about 1.5 minutes the first time (apt and an offline Go build), nothing after.
if [ "$(id -u)" = 0 ] && [ ! -x /usr/local/bin/vcsim ]; then bash "$(dirname "$0")/vcsim/build.sh" >&2; fi
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "setup-host: not root, cannot install ${need[*]}; the SSH tests will not run" >&2
  exit 0
fi
echo "setup-host: installing ${need[*]} for the SSH test hosts and the browser tests" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
