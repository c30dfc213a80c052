#!/usr/bin/env bash
# ci/kernel.sh [--source DIR|DEB] [--patches DIR] [--cache DIR] [--jobs N] [NAME]
#
# Builds a minimal guest kernel for `kernel:image=PATH` and prints the path of
# its vmlinux (booted through its PVH entry). The source is Debian's
# linux-source-6.1 (downloaded with apt-get download, unpacked in the cache,
# never installed), a linux-source .deb, or a kernel source tree given. The
# config is tinyconfig plus ci/kernels/ipcfuzz-guest.config; NAME picks a
# series of patches, ci/kernels/NAME/*.patch applied in name order (none for
# "stock", the default). Builds are cached by source version, patches, config
# fragment and this script: a second run prints the cached path at once. The
# unpatched tree is built once and kept in the cache; a series of patches
# rebuilds, in that tree, only what it touches, and is then taken out again.
#
#   ci/kernel.sh                 # stock 6.1
#   ci/kernel.sh pre-5.15        # 6.1 with sysvipc_find_ipc() of Linux <= 5.14
#   go run ./cmd/ipcfuzz compare optimized kernel:image="$(ci/kernel.sh)" --subsystem ids
#
# Needs: gcc make flex bison bc libelf-dev libssl-dev (and apt-get/dpkg-deb
# for Debian's source). 5-9 minutes with make -j2 on 2 cores.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source=""
patches=""
cache=${IPCFUZZ_KERNEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ipcfuzz/kernel-builds}
jobs=$(nproc)
name=stock
while [ $# -gt 0 ]; do
  case $1 in
    --source) source=$2; shift 2 ;;
    --patches) patches=$2; shift 2 ;;
    --cache) cache=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "ci/kernel.sh: unknown option $1" >&2; exit 2 ;;
    *) name=$1; shift ;;
  esac
done
if [ -z "$patches" ] && [ "$name" != stock ]; then
  patches=$here/kernels/$name
  [ -d "$patches" ] || { echo "ci/kernel.sh: no patch series $patches" >&2; exit 2; }
fi
fragment=$here/kernels/ipcfuzz-guest.config
mkdir -p "$cache/src"
log() { echo "ci/kernel.sh: $*" >&2; }

# The source: a tree, or Debian's linux-source .deb (its tarball unpacked
# once per version into the cache).
if [ -n "$source" ] && [ -d "$source" ]; then
  tree=$(cd "$source" && pwd)
  version="tree:$tree:$(cd "$tree" && (git rev-parse HEAD 2>/dev/null || make -s kernelversion))"
else
  deb=$source
  if [ -z "$deb" ]; then
    deb=$(ls "$cache"/src/linux-source-6.1_*.deb 2>/dev/null | sort -V | tail -1 || true)
    if [ -z "$deb" ]; then
      log "downloading linux-source-6.1 (apt-get download)"
      (cd "$cache/src" && apt-get download linux-source-6.1 >&2)
      deb=$(ls "$cache"/src/linux-source-6.1_*.deb | sort -V | tail -1)
    fi
  fi
  version=$(dpkg-deb -f "$deb" Package)_$(dpkg-deb -f "$deb" Version)
  tree=$cache/src/$version
  if [ ! -f "$tree/.unpacked" ]; then
    log "unpacking $deb"
    rm -rf "$tree" "$tree.tmp" "$tree.deb" && mkdir -p "$tree.tmp" "$tree.deb"
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tree.deb" --wildcards './usr/src/linux-source-*.tar.xz'
    tar -xJf "$tree.deb"/usr/src/linux-source-*.tar.xz -C "$tree.tmp" --strip-components=1
    rm -rf "$tree.deb"
    touch "$tree.tmp/.unpacked"
    mv "$tree.tmp" "$tree"
  fi
fi

# The keys: of the base build (source version, fragment, this script) and
# of this one (the base's and the patches).
series=()
if [ -n "$patches" ]; then
  while IFS= read -r p; do series+=("$p"); done < <(ls "$patches"/*.patch | sort)
fi
basekey=$( { echo "$version"; cat "$fragment" "$0"; } | sha256sum | cut -c1-16)
key=$( { echo "$basekey"; for p in "${series[@]}"; do basename "$p"; cat "$p"; done; } | sha256sum | cut -c1-16)
out=$cache/$name-$key
if [ -f "$out/vmlinux" ]; then
  echo "$out/vmlinux"
  exit 0
fi

# The base build: the unpatched tree configured and built once, kept in
# the cache (hard links to the unpacked source, so that it costs only its
# objects), so that a series of patches rebuilds only what it touches.
base=$cache/base-$basekey
if [ ! -f "$base/.built" ]; then
  # Built where it stays (objtool records absolute paths: see below).
  trap 'rm -rf "$base"' EXIT
  log "building the base tree ($version) in $base"
  rm -rf "$base"
  cp -al "$tree" "$base"
  (
    cd "$base"
    make -s ARCH=x86_64 tinyconfig >/dev/null
    scripts/kconfig/merge_config.sh -m .config "$fragment" >/dev/null
    make -s ARCH=x86_64 olddefconfig >/dev/null
    # Every line of the fragment must have survived olddefconfig.
    missing=$(grep -E '^(CONFIG_[A-Z0-9_]+=|# CONFIG_[A-Z0-9_]+ is not set)' "$fragment" | while IFS= read -r l; do grep -qxF "$l" .config || echo "$l"; done)
    if [ -n "$missing" ]; then echo "ci/kernel.sh: the config lost: $missing" >&2; exit 1; fi
    make -s -j"$jobs" ARCH=x86_64 bzImage >&2
  )
  touch "$base/.built"
  trap - EXIT
fi

# This build: the base's outputs for no patches; else the base tree itself,
# patched, rebuilt, and restored (patch -R, rebuilt again) under a lock. In
# place, not in a copy: objtool records absolute paths, and every object
# depends on objtool, so a tree that moved rebuilds everything.
build=$base
if [ ${#series[@]} -gt 0 ]; then
  exec 9>"$base.lock"
  flock 9
  restore() {
    for ((i = ${#series[@]} - 1; i >= 0; i--)); do
      patch -d "$base" -p1 -R --quiet --no-backup-if-mismatch < "${series[$i]}" || true
    done
    make -s -C "$base" -j"$jobs" ARCH=x86_64 bzImage >&2 || rm -f "$base/.built"
  }
  trap restore EXIT
  log "rebuilding $name (${#series[@]} patches) in $base"
  for p in "${series[@]}"; do
    log "applying $(basename "$p")"
    patch -d "$base" -p1 --quiet --no-backup-if-mismatch < "$p"
  done
  make -s -C "$base" -j"$jobs" ARCH=x86_64 bzImage >&2
fi
mkdir -p "$out.tmp"
cp "$build/vmlinux" "$build/arch/x86/boot/bzImage" "$build/.config" "$out.tmp/"
rm -rf "$out" && mv "$out.tmp" "$out"
echo "$out/vmlinux"
