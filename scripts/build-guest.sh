#!/usr/bin/env bash
# Builds the guest of the VM: Debian's kernel image for the release of the installed
# linux-headers-6.1.0-*-amd64, jal.ko built against those headers, and a busybox initramfs
# holding jal.ko, the given programs with their shared libraries and the given /init.
# Prints two lines on stdout: the kernel image and the initramfs (progress goes to stderr).
#
#   scripts/build-guest.sh --init FILE [--program FILE]... [--file SRC:DEST]...
#
# --program FILE   a dynamically linked program, installed as /usr/bin/<name> with every
#                  library ldd lists (same paths as on the host)
# --file SRC:DEST  any other file, installed at DEST
# The module lands at /lib/modules/jal.ko.
#
# Cached outside the repository, keyed by a hash of every input (kernel release, this
# script, driver/, the include/jal headers, the programs, the files, busybox):
#   ${JAL_GUEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/jal}/guest-<hash>/{vmlinuz,initrd.img,jal.ko}
# The kernel image itself is downloaded once per release (apt-get download) into
# .../guest-kernel-<release>/. JAL_GUEST_KERNEL_RELEASE picks another installed headers
# release. docs/vm.md explains how to use the result.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${JAL_GUEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/jal}
log() { echo "build-guest: $*" >&2; }
die() { log "$*"; exit 1; }

init=""
programs=()
files=()
while [ $# -gt 0 ]; do
  case $1 in
    --init) init=$2; shift 2 ;;
    --program) programs+=("$2"); shift 2 ;;
    --file) files+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1" ;;
  esac
done
[ -n "$init" ] && [ -f "$init" ] || die "--init FILE is required"

# ---- the kernel release: that of the installed Debian headers ------------------------------
. "$repo/scripts/lib/guest_kernel.sh"
release=$(guest_kernel_release)
[ -n "$release" ] || die "no /usr/src/linux-headers-6.1.0-*-amd64: install linux-headers-amd64 (scripts/setup.sh)"
kdir=/usr/src/linux-headers-$release
[ -f "$kdir/Makefile" ] || die "no kernel headers in $kdir"
busybox=/bin/busybox
[ -x "$busybox" ] && { ldd "$busybox" 2>&1 || true; } | grep -q 'not a dynamic' ||
  die "$busybox is missing or not static: install busybox-static (scripts/setup.sh)"
command -v cpio >/dev/null || die "no cpio: install cpio (scripts/setup.sh)"

# ---- the kernel image: downloaded once per release -----------------------------------------
kernel_dir=$cache/guest-kernel-$release
if [ ! -f "$kernel_dir/vmlinuz" ]; then
  log "downloading Debian's kernel image $release (apt-get download)"
  tmp=$(mktemp -d)
  (cd "$tmp" && { apt-get download -qq "linux-image-$release" 2>/dev/null ||
                  apt-get download -qq "linux-image-$release-unsigned"; }) >&2 ||
    die "apt-get download linux-image-$release failed (apt-get update first?)"
  dpkg-deb -x "$tmp"/linux-image-*.deb "$tmp/root"
  mkdir -p "$kernel_dir"
  cp "$tmp/root/boot/vmlinuz-$release" "$kernel_dir/vmlinuz.tmp"
  mv "$kernel_dir/vmlinuz.tmp" "$kernel_dir/vmlinuz"
  rm -rf "$tmp"
fi

# ---- the cache key -----------------------------------------------------------------------
for p in "${programs[@]}"; do [ -x "$p" ] || die "no program $p"; done
for f in "${files[@]}"; do [ -f "${f%%:*}" ] || die "no file ${f%%:*}"; done
hash=$( {
  echo "kernel $release $(sha256sum <"$kernel_dir/vmlinuz" | cut -c1-64)"
  echo "busybox $(sha256sum <"$busybox" | cut -c1-64)"
  cd "$repo"
  for f in scripts/build-guest.sh $(find driver include/jal -type f \( -name '*.[ch]' -o -name Kbuild -o -name Makefile \) | LC_ALL=C sort); do
    echo "$f $(sha256sum <"$f" | cut -c1-64)"
  done
  echo "init $(sha256sum <"$init" | cut -c1-64)"
  for p in "${programs[@]}"; do
    echo "program $(basename "$p") $(sha256sum <"$p" | cut -c1-64)"
    for lib in $(ldd "$p" | grep -o '/[^ ]*'); do echo "lib $lib $(sha256sum <"$lib" | cut -c1-64)"; done
  done
  for f in "${files[@]}"; do echo "file ${f#*:} $(sha256sum <"${f%%:*}" | cut -c1-64)"; done
} | sha256sum | cut -c1-16)
out=$cache/guest-$hash
if [ -f "$out/initrd.img" ]; then
  echo "$out/vmlinuz"
  echo "$out/initrd.img"
  exit 0
fi
start=$(date +%s)
stage=$out.tmp
rm -rf "$stage"; mkdir -p "$stage"

# ---- jal.ko: kbuild against the headers, in a copy of the sources ------------------------
log "building jal.ko against $kdir"
mkdir -p "$stage/src/include"
cp -r "$repo/driver" "$stage/src/driver"
cp -r "$repo/include/jal" "$stage/src/include/jal"
make -s -C "$kdir" M="$stage/src/driver" modules >"$stage/kbuild.log" 2>&1 || {
  cat "$stage/kbuild.log" >&2; die "building jal.ko failed"; }
if grep -E 'warning|error' "$stage/kbuild.log" >&2; then die "jal.ko builds with warnings"; fi
cp "$stage/src/driver/jal.ko" "$stage/jal.ko"
log "jal.ko built in $(( $(date +%s) - start )) s ($(grep -a -o -m1 "vermagic=[[:print:]]*" "$stage/jal.ko"))"

# ---- the initramfs -------------------------------------------------------------------------
root=$stage/root
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,usr/lib,proc,sys,dev,tmp,lib/modules,etc}
cp "$busybox" "$root/bin/busybox"
cp "$init" "$root/init"; chmod 755 "$root/init"
cp "$stage/jal.ko" "$root/lib/modules/jal.ko"
# Libraries keep their paths; those found through a build tree's RUNPATH (libjal.so) go
# to /usr/lib, where the loader looks anyway.
install_with_libs() { # program dest
  cp "$1" "$root$2"
  for lib in $(ldd "$1" | grep -o '/[^ ]*'); do
    case $lib in
      /lib/*|/lib64/*|/usr/lib/*) mkdir -p "$root$(dirname "$lib")"; cp -L "$lib" "$root$lib" ;;
      *) cp -L "$lib" "$root/usr/lib/" ;;
    esac
  done
}
for p in "${programs[@]}"; do install_with_libs "$p" "/usr/bin/$(basename "$p")"; done
for f in "${files[@]}"; do mkdir -p "$root$(dirname "${f#*:}")"; cp "${f%%:*}" "$root${f#*:}"; done
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -1) >"$stage/initrd.img"
cp "$kernel_dir/vmlinuz" "$stage/vmlinuz"
rm -rf "$stage/src" "$root"
rm -rf "$out"; mv "$stage" "$out"
log "guest built in $(( $(date +%s) - start )) s: $out ($(du -sh "$out/initrd.img" | cut -f1) initramfs)"
echo "$out/vmlinuz"
echo "$out/initrd.img"
