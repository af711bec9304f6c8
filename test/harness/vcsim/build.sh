#!/usr/bin/env bash
# Build a `vcsim` (vSphere API simulator, govmomi) binary OFFLINE from Debian 12 packages.
#
# Debian's golang-github-vmware-govmomi-dev (0.24.2) ships the simulator library
# (github.com/vmware/govmomi/simulator and the vapi/lookup/pbm/sts endpoints), but
# not the upstream vcsim/ or govc/ commands. This script writes a small main package
# around that library and builds it in GOPATH mode against /usr/share/gocode, so
# Go never contacts a module proxy (GO111MODULE=off, GOPROXY=off).
#
# Idempotent: does nothing if $VCSIM_BIN already exists (set FORCE=1 to rebuild).
#   Env: VCSIM_BIN (default /usr/local/bin/vcsim), NICE (default 0: it runs before the tests, and
#   niced on a busy machine it starved for many minutes), FORCE.
#   Needs root (or sudo) for apt-get and to write /usr/local/bin.
#
# Usage after building:
#   vcsim -l 127.0.0.1:8989            # prints: export GOVC_URL=https://user:pass@127.0.0.1:8989/sdk GOVC_SIM_PID=...
#   vcsim -l 127.0.0.1:0 -tls=false    # random port, plain http; parse the printed URL
#   vcsim -h                           # model size flags: -dc -cluster -host -standalone-host -ds -vm -folder -autostart
# SOAP API at /sdk (vim25; any user/password unless -username/-password is given).
# A fake guest IP is set with extraConfig "SET.guest.ipAddress" (ReconfigVM_Task or clone spec.config).
set -euo pipefail

VCSIM_BIN=${VCSIM_BIN:-/usr/local/bin/vcsim}
NICE=${NICE:-0}

if [[ -x "$VCSIM_BIN" && -z "${FORCE:-}" ]]; then
  echo "vcsim already present at $VCSIM_BIN"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; fi

PKGS=(golang-go golang-github-vmware-govmomi-dev golang-github-google-uuid-dev)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if (( ${#missing[@]} )); then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y --no-install-recommends "${missing[@]}" \
    || { $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends "${missing[@]}"; }
fi

WORK=$(mktemp -d /tmp/vcsim-build.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/src/vcsim"

cat > "$WORK/src/vcsim/main.go" <<'GO'
// vcsim: minimal launcher for the govmomi vSphere simulator (govmomi 0.24.x API).
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"github.com/vmware/govmomi/simulator"

	// optional endpoints: /lookupservice, /pbm, /sts, /rest (vAPI: session, tagging, content library)
	_ "github.com/vmware/govmomi/lookup/simulator"
	_ "github.com/vmware/govmomi/pbm/simulator"
	_ "github.com/vmware/govmomi/sts/simulator"
	_ "github.com/vmware/govmomi/vapi/simulator"
)

func main() {
	m := simulator.VPX()
	flag.IntVar(&m.Datacenter, "dc", m.Datacenter, "number of datacenters")
	flag.IntVar(&m.Cluster, "cluster", m.Cluster, "clusters per datacenter")
	flag.IntVar(&m.ClusterHost, "host", m.ClusterHost, "hosts per cluster")
	flag.IntVar(&m.Host, "standalone-host", m.Host, "standalone hosts per datacenter")
	flag.IntVar(&m.Datastore, "ds", m.Datastore, "local datastores")
	flag.IntVar(&m.Machine, "vm", m.Machine, "VMs per resource pool")
	flag.IntVar(&m.Folder, "folder", m.Folder, "folders")
	flag.BoolVar(&m.Autostart, "autostart", m.Autostart, "power on the model's VMs at start")
	flag.IntVar(&m.DelayConfig.Delay, "delay", 0, "response delay (ms) for every method")
	apiVersion := flag.String("api-version", "", "override ServiceContent.about.apiVersion (default 6.5)")
	esx := flag.Bool("esx", false, "simulate a standalone ESX host instead of vCenter")
	listen := flag.String("l", "127.0.0.1:8989", "listen address (port 0 picks a free port)")
	useTLS := flag.Bool("tls", true, "serve https (self-signed unless -tlscert/-tlskey)")
	cert := flag.String("tlscert", "", "TLS certificate file")
	key := flag.String("tlskey", "", "TLS key file")
	user := flag.String("username", "", "required login username (any if empty)")
	pass := flag.String("password", "", "required login password (any if empty)")
	flag.BoolVar(&simulator.Trace, "trace", false, "trace SOAP requests/responses to stderr")
	flag.Parse()

	if *esx {
		opts := m
		m = simulator.ESX()
		m.Datastore, m.Machine, m.Autostart = opts.Datastore, opts.Machine, opts.Autostart
		m.DelayConfig = opts.DelayConfig
	}
	if *apiVersion != "" {
		m.ServiceContent.About.ApiVersion = *apiVersion
	}
	if err := m.Create(); err != nil {
		log.Fatal(err)
	}

	u := &url.URL{Host: *listen}
	if *user != "" {
		u.User = url.UserPassword(*user, *pass)
	}
	m.Service.RegisterEndpoints = true
	m.Service.Listen = u
	if *useTLS {
		m.Service.TLS = new(tls.Config)
		if *cert != "" {
			c, err := tls.LoadX509KeyPair(*cert, *key)
			if err != nil {
				log.Fatal(err)
			}
			m.Service.TLS.Certificates = []tls.Certificate{c}
		}
	}
	s := m.Service.NewServer()
	fmt.Printf("export GOVC_URL=%s GOVC_SIM_PID=%d\n", s.URL, os.Getpid())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	s.Close()
	m.Remove()
}
GO

mkdir -p "$(dirname "$VCSIM_BIN")"
start=$(date +%s)
(
  cd "$WORK"
  export GOPATH="$WORK:/usr/share/gocode" GO111MODULE=off GOPROXY=off GOFLAGS= \
         GOCACHE="${GOCACHE:-$HOME/.cache/go-build}"
  nice -n "$NICE" go build -trimpath -ldflags '-s -w' -o "$WORK/vcsim" vcsim
)
$SUDO install -m 0755 "$WORK/vcsim" "$VCSIM_BIN"
echo "built $VCSIM_BIN in $(( $(date +%s) - start ))s ($(dpkg-query -W -f='${Version}' golang-github-vmware-govmomi-dev), $(go version | cut -d' ' -f3))"
