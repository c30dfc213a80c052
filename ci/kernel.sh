#!/usr/bin/env bash
# ci/kernel.sh [--base 6.1|6.12] [--source DIR|DEB] [--patches DIR] [--cache DIR] [--jobs N] [NAME]
#
# Builds a minimal guest kernel for `kernel:image=PATH` and prints the path of
# its vmlinux (booted through its PVH entry). The source is Debian's
# linux-source-BASE (--base 6.1, the default, or 6.12; downloaded with
# apt-get download, unpacked in the cache, never installed), a linux-source
# .deb, or a kernel source tree. The config is tinyconfig plus
# ci/kernels/ipcfuzz-guest.config. NAME picks a series of patches,
# ci/kernels/NAME/*.patch applied in name order (none for "stock", the
# default); a file ci/kernels/NAME/base names the series' base (6.1 or 6.12)
# when --base is not given. Builds are cached by source version, config
# fragment, patches and the build recipe: a second run prints the cached
# path at once. The unpatched tree of each base is built once and kept; a
# series is applied to it, rebuilt (only what it touches) and left applied
# until the next series needs the tree, which first takes it out again.
# With ccache installed, objects are cached too ($cache/ccache).
#
#   ci/kernel.sh                        # stock 6.1
#   ci/kernel.sh --base 6.12            # stock 6.12
#   ci/kernel.sh pre-5.15               # 6.1 with sysvipc_find_ipc() of Linux <= 5.14
#   ci/kernel.sh --source ~/linux --patches my-series
#   go run ./cmd/ipcfuzz compare optimized kernel:image="$(ci/kernel.sh)" --subsystem ids
#
# Needs: gcc make flex bison bc libelf-dev libssl-dev (and apt-get/dpkg-deb
# for Debian's source). The first build of a base: 5-10 minutes with make -j2
# on 2 idle cores; a series of one file: about a minute.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# recipe is the version of how a tree is configured and built: bump it when
# a change below changes what a build produces (it keys the cache, not the
# script's text, so that editing a comment rebuilds nothing).
recipe=2
source=""
patches=""
basever=""
cache=${IPCFUZZ_KERNEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ipcfuzz/kernel-builds}
jobs=$(nproc)
name=stock
while [ $# -gt 0 ]; do
  case $1 in
    --base) basever=${2:-}; shift 2 ;;
    --source) source=${2:-}; shift 2 ;;
    --patches) patches=${2:-}; shift 2 ;;
    --cache) cache=${2:-}; shift 2 ;;
    --jobs) jobs=${2:-}; shift 2 ;;
    -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "ci/kernel.sh: unknown option $1" >&2; exit 2 ;;
    *) name=$1; shift ;;
  esac
done
if [ -z "$patches" ] && [ "$name" != stock ]; then
  patches=$here/kernels/$name
  [ -d "$patches" ] || { echo "ci/kernel.sh: no patch series $patches" >&2; exit 2; }
fi
if [ -n "$patches" ]; then
  [ -d "$patches" ] || { echo "ci/kernel.sh: --patches $patches: not a directory" >&2; exit 2; }
  patches=$(cd "$patches" && pwd)
  if [ -z "$basever" ] && [ -f "$patches/base" ]; then basever=$(tr -d ' \n' < "$patches/base"); fi
fi
basever=${basever:-6.1}
case $basever in
  6.1|6.12) ;;
  *) echo "ci/kernel.sh: --base $basever: Debian's archive has linux-source-6.1 and linux-source-6.12" >&2; exit 2 ;;
esac
fragment=$here/kernels/ipcfuzz-guest.config
mkdir -p "$cache/src"
log() { echo "ci/kernel.sh: $*" >&2; }

# The source: a tree, or Debian's linux-source .deb (its tarball unpacked
# once per version into the cache).
if [ -n "$source" ] && [ -d "$source" ]; then
  tree=$(cd "$source" && pwd)
  [ -f "$tree/Makefile" ] && [ -d "$tree/ipc" ] || { echo "ci/kernel.sh: --source $source: not a kernel source tree (no Makefile or ipc/)" >&2; exit 2; }
  version="tree:$tree:$(cd "$tree" && (git rev-parse HEAD 2>/dev/null || make -s kernelversion))"
elif [ -n "$source" ] && [ ! -f "$source" ]; then
  echo "ci/kernel.sh: --source $source: no such tree or package" >&2; exit 2
else
  deb=$source
  if [ -z "$deb" ]; then
    deb=$(ls "$cache"/src/linux-source-"$basever"_*.deb 2>/dev/null | sort -V | tail -1 || true)
    if [ -z "$deb" ]; then
      log "downloading linux-source-$basever (apt-get download)"
      (cd "$cache/src" && apt-get download "linux-source-$basever" >&2)
      deb=$(ls "$cache"/src/linux-source-"$basever"_*.deb | sort -V | tail -1)
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

# The keys: of the base build (source version, fragment, recipe) and of
# this one (the base's and the patches).
series=()
if [ -n "$patches" ]; then
  while IFS= read -r p; do series+=("$p"); done < <(ls "$patches"/*.patch 2>/dev/null | sort)
  [ ${#series[@]} -gt 0 ] || { echo "ci/kernel.sh: $patches holds no *.patch" >&2; exit 2; }
fi
basekey=$( { echo "$version"; cat "$fragment"; echo "recipe $recipe"; } | sha256sum | cut -c1-16)
key=$( { echo "$basekey"; for p in "${series[@]}"; do basename "$p"; cat "$p"; done; } | sha256sum | cut -c1-16)
out=$cache/$name-$key
if [ -f "$out/vmlinux" ]; then
  echo "$out/vmlinux"
  exit 0
fi

mk=(make -s -j"$jobs" ARCH=x86_64)
if command -v ccache >/dev/null 2>&1; then
  export CCACHE_DIR=${CCACHE_DIR:-$cache/ccache} CCACHE_BASEDIR=$cache CCACHE_NOHASHDIR=1 CCACHE_SLOPPINESS=time_macros,include_file_mtime,include_file_ctime
  mk+=(CC="ccache gcc")
fi

# The base tree: the unpacked source configured and built once, kept in the
# cache (hard links to the unpacked source, so that it costs only its
# objects). Built where it stays: objtool records absolute paths, and every
# object depends on objtool, so a tree that moved rebuilds everything.
base=$cache/base-$basekey
exec 9>"$base.lock"
flock 9
if [ ! -f "$base/.built" ]; then
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
    "${mk[@]}" bzImage >&2
  )
  mkdir -p "$base/.series"
  touch "$base/.built"
  trap - EXIT
fi

# The series applied to the tree now (copies of its patches, in order, in
# $base/.series) is taken out, newest first; then this one is applied and
# kept. A patch is edited in the tree, not in the unpacked source: a file a
# patch touches is copied first (patch breaks the hard link).
unapply() {
  local p
  while IFS= read -r p; do
    patch -d "$base" -p1 -R --quiet --no-backup-if-mismatch < "$p" ||
      { log "cannot take out $(basename "$p"): rebuilding the base"; rm -f "$base/.built"; exit 1; }
  done < <(ls "$base/.series"/*.patch 2>/dev/null | sort -r)
  rm -f "$base/.series"/*.patch
}
applied=$(ls "$base/.series"/*.patch 2>/dev/null | wc -l)
if [ "$applied" -gt 0 ] || [ ${#series[@]} -gt 0 ]; then
  [ "$applied" -gt 0 ] && log "taking out the series applied ($applied patches)"
  unapply
  i=0
  for p in "${series[@]}"; do
    log "applying $(basename "$p")"
    if ! patch -d "$base" -p1 --quiet --no-backup-if-mismatch --dry-run < "$p" >/dev/null; then
      echo "ci/kernel.sh: $p does not apply to $version" >&2; exit 1
    fi
    patch -d "$base" -p1 --quiet --no-backup-if-mismatch < "$p"
    i=$((i + 1))
    cp "$p" "$base/.series/$(printf %03d $i).patch"
  done
  log "building $name in $base"
  "${mk[@]}" -C "$base" bzImage >&2
fi
mkdir -p "$out.tmp"
cp "$base/vmlinux" "$base/arch/x86/boot/bzImage" "$base/.config" "$out.tmp/"
{ echo "name $name"; echo "source $version"; echo "base $basever"; for p in "${series[@]}"; do echo "patch $(basename "$p")"; done; } > "$out.tmp/BUILD"
rm -rf "$out" && mv "$out.tmp" "$out"
echo "$out/vmlinux"
