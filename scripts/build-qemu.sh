#!/usr/bin/env bash
# Builds Debian bookworm's QEMU 7.2 with the jal-pci device (emu/qemu/) for x86_64 and
# prints the path of qemu-system-x86_64 on stdout (progress goes to stderr).
#
#   scripts/build-qemu.sh            build, or print the cached result
#   scripts/build-qemu.sh --refresh  re-read Debian's source index first (new QEMU upload)
#
# The result is cached outside the repository, keyed by a hash of its inputs (this script,
# emu/qemu/*, the include/jal headers the device includes, the QEMU source version):
#   ${JAL_QEMU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/jal}/qemu-<hash>/bin/qemu-system-x86_64
# When that exists the script prints it and does nothing else (no network).
#
# The source comes from `apt-get source qemu` with a private apt configuration (its own
# sources list with one deb-src line, its own state and cache directories under the cache
# dir), so the system's apt configuration is untouched. The patched tree and its build
# directory are kept (qemu-work/) so a change to the device rebuilds one file.
# docs/vm.md explains how to use the result.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${JAL_QEMU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/jal}
refresh=0
for arg in "$@"; do
  case $arg in
    --refresh) refresh=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-qemu: unknown argument $arg" >&2; exit 2 ;;
  esac
done
log() { echo "build-qemu: $*" >&2; }

# ---- private apt configuration --------------------------------------------------------
apt_dir=$cache/apt
mkdir -p "$apt_dir/etc/sources.list.d" "$apt_dir/etc/preferences.d" \
         "$apt_dir/state/lists/partial" "$apt_dir/cache/archives/partial"
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main" \
  >"$apt_dir/etc/sources.list"
apt_opts=(
  -o "Dir::Etc::SourceList=$apt_dir/etc/sources.list"
  -o "Dir::Etc::SourceParts=$apt_dir/etc/sources.list.d"
  -o "Dir::Etc::Preferences=$apt_dir/etc/preferences"
  -o "Dir::Etc::PreferencesParts=$apt_dir/etc/preferences.d"
  -o "Dir::State=$apt_dir/state"
  -o "Dir::Cache=$apt_dir/cache"
  -o "APT::Sandbox::User=root"
)
if [ $refresh -eq 1 ] || ! ls "$apt_dir"/state/lists/*_Sources* >/dev/null 2>&1; then
  log "reading Debian bookworm's source index (private apt config in $apt_dir)"
  apt-get "${apt_opts[@]}" -qq update >&2
fi
version=$(apt-cache "${apt_opts[@]}" showsrc qemu | awk '/^Version:/ && !v { v = $2 } END { print v }')
[ -n "$version" ] || { log "no qemu source package in the index"; exit 1; }

# ---- the cache key ---------------------------------------------------------------------
# The jal headers the device includes, directly or through each other (paths under
# include/): only these are copied into the QEMU tree and hashed, so the many other changes
# to include/jal do not rebuild QEMU.
jal_headers() {
  local todo seen="" h dir inc
  todo=$(sed -n 's|^#include "\(jal/[^"]*\)"|\1|p' "$repo"/emu/qemu/*.c)
  while [ -n "$todo" ]; do
    set -- $todo; h=$1; shift; todo="$*"
    case " $seen " in *" $h "*) continue ;; esac
    seen="$seen $h"
    dir=$(dirname "$h")
    for inc in $(sed -n 's|^#include "\([^"]*\)"|\1|p' "$repo/include/$h"); do
      todo="$todo $(realpath -m --relative-to="$repo/include" "$repo/include/$dir/$inc")"
    done
  done
  printf '%s\n' $seen | LC_ALL=C sort
}

hash=$( {
  echo "qemu $version"
  cd "$repo"
  for f in scripts/build-qemu.sh $(find emu/qemu -type f | LC_ALL=C sort) $(jal_headers | sed 's|^|include/|'); do
    echo "$f $(sha256sum <"$f" | cut -d' ' -f1)"
  done
} | sha256sum | cut -c1-16)
prefix=$cache/qemu-$hash
qemu=$prefix/bin/qemu-system-x86_64
if [ -x "$qemu" ]; then
  echo "$qemu"
  exit 0
fi
log "building QEMU $version with jal-pci into $prefix"
start=$(date +%s)

# ---- build dependencies (idempotent, like scripts/setup.sh) -----------------------------
packages=(build-essential ninja-build meson python3 pkg-config dpkg-dev flex bison
          libglib2.0-dev libpixman-1-dev zlib1g-dev libfdt-dev seabios qemu-system-data)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ---- source: apt-get source, once per version -------------------------------------------
work=$cache/qemu-work
dirver=${version#*:}  # QEMU's configure refuses colons in its path: drop the epoch
src=$work/src-$dirver
tree=$work/tree-$dirver
if [ ! -f "$src/configure" ]; then
  log "fetching the qemu $version source (apt-get source)"
  rm -rf "$work/fetch"; mkdir -p "$work/fetch"
  (cd "$work/fetch" && apt-get "${apt_opts[@]}" -qq source qemu >/dev/null)
  rm -rf "$src"
  mv "$(find "$work/fetch" -mindepth 1 -maxdepth 1 -type d -name 'qemu-*')" "$src"
  rm -rf "$work/fetch"
fi
if [ ! -f "$tree/configure" ]; then
  log "copying the source to $tree"
  rm -rf "$tree"; cp -a "$src" "$tree"
fi

# ---- our device: copy files (only when changed, so ninja rebuilds only what changed) ----
install_if_changed() { # src dst
  mkdir -p "$(dirname "$2")"
  cmp -s "$1" "$2" || cp "$1" "$2"
}
# QEMU's own file (from the pristine source) with our snippet appended; rewritten only when
# that differs, so a changed snippet (a new trace point) reaches the tree.
append_snippet() { # snippet file-under-tree
  cat "$src/$2" "$1" >"$work/snippet.tmp"
  install_if_changed "$work/snippet.tmp" "$tree/$2"
  rm -f "$work/snippet.tmp"
}
install_if_changed "$repo/emu/qemu/jal_pci.c" "$tree/hw/misc/jal_pci.c"
install_if_changed "$repo/emu/qemu/devices.mak" "$tree/configs/devices/x86_64-softmmu/jal.mak"
# The device includes the jal contract headers as <jal/...>; a copy inside the QEMU tree's
# include/ keeps the patched tree self-contained (no path back into this repository).
jal_headers | while read -r h; do
  install_if_changed "$repo/include/$h" "$tree/include/$h"
done
append_snippet "$repo/emu/qemu/Kconfig" hw/misc/Kconfig
append_snippet "$repo/emu/qemu/meson.build" hw/misc/meson.build
append_snippet "$repo/emu/qemu/trace-events" hw/misc/trace-events

# ---- configure (again only when the flags changed) --------------------------------------
flags=(
  --target-list=x86_64-softmmu
  --without-default-features --without-default-devices --with-devices-x86_64=jal
  --enable-tcg --enable-kvm
  --disable-docs --disable-werror --disable-tools --disable-guest-agent
  --disable-user --disable-linux-user --disable-bsd-user
  --disable-install-blobs --audio-drv-list= --enable-fdt=system
)
build=$tree/build
if [ ! -f "$build/build.ninja" ] || [ "$(cat "$build/jal-configure-flags" 2>/dev/null)" != "${flags[*]}" ]; then
  log "configuring: ${flags[*]}"
  rm -rf "$build"; mkdir -p "$build"
  (cd "$build" && ../configure "${flags[@]}" >configure.log 2>&1) || {
    tail -30 "$build/configure.log" >&2; log "configure failed ($build/configure.log)"; exit 1; }
  echo "${flags[*]}" >"$build/jal-configure-flags"
fi

# ---- build -------------------------------------------------------------------------------
log "building with ninja ($(nproc) jobs; about 5 minutes on 2 cores the first time)"
ninja -C "$build" qemu-system-x86_64 >"$build/ninja.log" 2>&1 || {
  grep -B2 -A12 'error' "$build/ninja.log" | head -60 >&2
  log "build failed ($build/ninja.log)"; exit 1; }

# ---- install: the binary, and the x86 firmware Debian ships in seabios and qemu-system-data
# QEMU finds its data relative to the binary (../share/qemu), so the prefix is relocatable.
stage=$prefix.tmp
rm -rf "$stage"; mkdir -p "$stage/bin" "$stage/share/qemu"
cp "$build/qemu-system-x86_64" "$stage/bin/"
for f in bios-256k.bin bios.bin kvmvapic.bin linuxboot.bin linuxboot_dma.bin multiboot.bin \
         multiboot_dma.bin pvh.bin vgabios-stdvga.bin; do
  for d in /usr/share/qemu /usr/share/seabios; do
    if [ -e "$d/$f" ]; then cp -L "$d/$f" "$stage/share/qemu/"; break; fi
  done
done
[ -f "$stage/share/qemu/bios-256k.bin" ] || { log "no bios-256k.bin (package seabios)"; exit 1; }
cat >"$stage/jal-build-info" <<INFO
qemu source: $version (Debian bookworm, apt-get source qemu)
hash: $hash
configure: ${flags[*]}
tree: $tree
built: $(date -u +%Y-%m-%dT%H:%M:%SZ) in $(( $(date +%s) - start )) s
INFO
rm -rf "$prefix"; mv "$stage" "$prefix"
log "done in $(( $(date +%s) - start )) s"
echo "$qemu"
