#!/usr/bin/env bash
# ci/kernel.sh [--base 6.1|6.12] [--source DIR|DEB] [--patches DIR] [--cache DIR] [--jobs N] [--cover] [--rebuild] [NAME]
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
# path at once (--rebuild builds it again all the same, from the kept
# tree: what a benchmark of a rebuild runs). A tree given with --source is built out of tree (make O=,
# incremental; never taken from the cache, since the tree may have changed). The unpatched tree of each base is built once and kept; a
# series is applied to it, rebuilt (only what it touches) and left applied
# until the next series needs the tree, which first takes it out again.
# With ccache installed, objects are cached too ($cache/ccache).
# --cover also merges ci/kernels/ipcfuzz-cover.config (KCOV, debugfs, line
# tables): a kernel for `--cover DIR` runs, with a base tree and cache
# entries of its own (the fragments key them), named NAME-cover-KEY.
#
#   ci/kernel.sh                        # stock 6.1
#   ci/kernel.sh --base 6.12            # stock 6.12
#   ci/kernel.sh --base 6.12 --cover    # stock 6.12 with KCOV and line tables
#   ci/kernel.sh pre-5.15               # 6.1 with sysvipc_find_ipc() of Linux <= 5.14
#   ci/kernel.sh --source ~/linux --patches my-series
#   go run ./cmd/ipcfuzz compare optimized kernel:image="$(ci/kernel.sh)" --subsystem ids
#
# Needs: gcc make flex bison bc libelf-dev libssl-dev (apt-get and dpkg-deb
# for Debian's source, rsync for a tree with patches). The first build of a
# base: 5-10 minutes with make -j2 on 2 idle cores; a series of one file:
# about a minute.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# recipe is the version of how a tree is configured and built: bump it when
# a change below changes what a build produces (it keys the cache, not the
# script's text, so that editing a comment rebuilds nothing).
recipe=2
source=""
patches=""
basever=""
rebuild=""
cover=""
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
    --rebuild) rebuild=1; shift ;;
    --cover) cover=1; shift ;;
    -h|--help) sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
  # Named after its series unless named: a tree's build with patches
  # must not land where the tree's own build is (out-stock).
  [ "$name" = stock ] && name=$(basename "$patches")
  if [ -z "$basever" ] && [ -f "$patches/base" ]; then basever=$(tr -d ' \n' < "$patches/base"); fi
fi
basever=${basever:-6.1}
case $basever in
  6.1|6.12) ;;
  *) echo "ci/kernel.sh: --base $basever: Debian's archive has linux-source-6.1 and linux-source-6.12" >&2; exit 2 ;;
esac
fragments=("$here/kernels/ipcfuzz-guest.config")
[ -n "$cover" ] && fragments+=("$here/kernels/ipcfuzz-cover.config")
mkdir -p "$cache/src"
log() { echo "ci/kernel.sh: $*" >&2; }

# configure SRC DIR: tinyconfig plus the fragment in DIR (the tree itself,
# or its O= object directory). A line of the fragment whose symbol this
# kernel does not know (absent from the resulting .config) is left out; a
# known one must have survived olddefconfig. Kernels since 6.9 have no
# BASE_FULL: their bool BASE_SMALL is turned off instead.
configure() {
  local src=$1 dir=$2 o=()
  [ "$src" != "$dir" ] && o=(O="$dir")
  make -s -C "$src" "${o[@]}" ARCH=x86_64 tinyconfig >/dev/null
  (cd "$dir" && "$src/scripts/kconfig/merge_config.sh" -m .config "${fragments[@]}" >/dev/null)
  if ! grep -q '^config BASE_FULL' "$src/init/Kconfig" && grep -A1 '^config BASE_SMALL' "$src/init/Kconfig" | grep -q bool; then
    "$src/scripts/config" --file "$dir/.config" -d BASE_SMALL
  fi
  make -s -C "$src" "${o[@]}" ARCH=x86_64 olddefconfig >/dev/null
  local l sym missing=""
  while IFS= read -r l; do
    sym=$(echo "$l" | grep -oE 'CONFIG_[A-Z0-9_]+')
    grep -qE "^($sym=|# $sym is not set)" "$dir/.config" || { log "this kernel has no ${sym#CONFIG_}: left out"; continue; }
    grep -qxF "$l" "$dir/.config" || missing="$missing $l"
  done < <(grep -hE '^(CONFIG_[A-Z0-9_]+=|# CONFIG_[A-Z0-9_]+ is not set)' "${fragments[@]}")
  if [ -n "$missing" ]; then echo "ci/kernel.sh: the config lost:$missing" >&2; return 1; fi
}

# The source: a tree, or Debian's linux-source .deb (its tarball unpacked
# once per version into the cache).
srctree=""
if [ -n "$source" ] && [ -d "$source" ]; then
  srctree=$(cd "$source" && pwd)
  [ -f "$srctree/Makefile" ] && [ -d "$srctree/ipc" ] || { echo "ci/kernel.sh: --source $source: not a kernel source tree (no Makefile or ipc/)" >&2; exit 2; }
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

series=()
if [ -n "$patches" ]; then
  while IFS= read -r p; do series+=("$p"); done < <(ls "$patches"/*.patch 2>/dev/null | sort)
  [ ${#series[@]} -gt 0 ] || { echo "ci/kernel.sh: $patches holds no *.patch" >&2; exit 2; }
fi

mk=(make -s -j"$jobs" ARCH=x86_64)
if command -v ccache >/dev/null 2>&1; then
  export CCACHE_DIR=${CCACHE_DIR:-$cache/ccache} CCACHE_BASEDIR=$cache CCACHE_NOHASHDIR=1 CCACHE_SLOPPINESS=time_macros,include_file_mtime,include_file_ctime
  mk+=(CC="ccache gcc")
fi

# A developer's tree changes under us (a checkout, an edit not committed),
# so its builds are never taken from a cache by key: it is built out of
# tree (make O=), in one object directory per tree and config that is
# kept, and make rebuilds what changed since the last build. The tree must
# be clean of an in-tree build (make mrproper). With patches, a copy of
# the tree is brought to the tree's state (rsync; what it changes is
# touched, so that make sees it newer than its objects), patched, and
# built in an object directory of its own.
if [ -n "$srctree" ]; then
  treekey=$( { echo "$srctree"; cat "${fragments[@]}"; echo "recipe $recipe"; } | sha256sum | cut -c1-16)
  work=$cache/tree-$treekey
  mkdir -p "$work"
  exec 9>"$work.lock"
  flock 9
  src=$srctree obj=$work/obj
  if [ ${#series[@]} -gt 0 ]; then
    command -v rsync >/dev/null || { echo "ci/kernel.sh: --patches on a tree needs rsync (apt-get install rsync)" >&2; exit 2; }
    src=$work/src obj=$work/obj-patched
    mkdir -p "$src"
    log "bringing the copy of $srctree to its state"
    rsync -a --delete --exclude=/.git --out-format='%n' "$srctree/" "$src/" > "$work/changed"
    (cd "$src" && grep -v '/$' "$work/changed" | xargs -r -d '\n' touch -c --)
    for p in "${series[@]}"; do
      log "applying $(basename "$p")"
      patch -d "$src" -p1 --quiet --no-backup-if-mismatch --dry-run < "$p" >/dev/null ||
        { echo "ci/kernel.sh: $p does not apply to $srctree" >&2; exit 1; }
      patch -d "$src" -p1 --quiet --no-backup-if-mismatch < "$p"
    done
  fi
  mkdir -p "$obj"
  if [ ! -f "$obj/.configured" ]; then
    log "configuring $obj"
    configure "$src" "$obj"
    touch "$obj/.configured"
  fi
  log "building $srctree${series:+ with $name} in $obj"
  "${mk[@]}" -C "$src" O="$obj" bzImage >&2
  out=$work/out-$name
  mkdir -p "$out.tmp"
  cp "$obj/vmlinux" "$obj/arch/x86/boot/bzImage" "$obj/.config" "$out.tmp/"
  { echo "name $name"; echo "source $srctree $(cd "$srctree" && git rev-parse HEAD 2>/dev/null || true)"; for p in "${series[@]}"; do echo "patch $(basename "$p")"; done; } > "$out.tmp/BUILD"
  rm -rf "$out" && mv "$out.tmp" "$out"
  echo "$out/vmlinux"
  exit 0
fi

# The keys: of the base build (source version, fragment, recipe) and of
# this one (the base's and the patches).
basekey=$( { echo "$version"; cat "${fragments[@]}"; echo "recipe $recipe"; } | sha256sum | cut -c1-16)
key=$( { echo "$basekey"; for p in "${series[@]}"; do basename "$p"; cat "$p"; done; } | sha256sum | cut -c1-16)
out=$cache/$name${cover:+-cover}-$key
if [ -f "$out/vmlinux" ] && [ -z "$rebuild" ]; then
  echo "$out/vmlinux"
  exit 0
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
    configure "$base" "$base"
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
  done < <(find "$base/.series" -name '*.patch' | sort -r)
  rm -f "$base/.series"/*.patch
}
mkdir -p "$base/.series"
applied=$(find "$base/.series" -name '*.patch' | wc -l)
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
