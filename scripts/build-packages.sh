#!/usr/bin/env bash
# Builds the Debian packages of a built tree and checks that they work (docs/install.md):
#
#   scripts/build-packages.sh [BUILD_DIR [OUT_DIR]]   default build/ and BUILD_DIR/packages
#
# * `cpack -G DEB` writes libjal0, libjal-dev, jal-tools, jal-emu and jal-dkms into OUT_DIR
#   (cmake/packaging.cmake). The build tree must exist (scripts/build.sh; CI reuses the test
#   stage's build/); it is brought up to date first, which costs nothing when it is.
# * Each package's fields and files are printed (dpkg-deb --info, --contents).
# * jal-dkms is checked the way DKMS uses it on a user's machine: its /usr/src/jal-VERSION is
#   added to a private DKMS tree and `dkms build` makes jal.ko for the guest kernel of
#   docs/vm.md (scripts/lib/guest_kernel.sh); the module must carry that kernel's vermagic.
#   Nothing is installed into the system (as root, DKMS may create its module-signing key
#   in /var/lib/dkms, as it does on first use anywhere).
#
# The .deb paths go to stdout, everything else to stderr.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$repo/scripts/lib/guest_kernel.sh"
log() { echo "build-packages: $*" >&2; }
die() { log "$*"; exit 1; }

case ${1:-} in
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
build=$(cd "${1:-$repo/build}" 2>/dev/null && pwd) || die "no build directory ${1:-$repo/build}"
out=${2:-$build/packages}
[ -f "$build/CPackConfig.cmake" ] || die "$build is not a configured build tree (scripts/build.sh)"
command -v dpkg-shlibdeps >/dev/null || die "no dpkg-shlibdeps: install dpkg-dev (scripts/setup.sh)"
command -v dkms >/dev/null || die "no dkms: install dkms (scripts/setup.sh)"
release=$(guest_kernel_release)
[ -n "$release" ] || die "no /usr/src/linux-headers-6.1.0-*-amd64: install linux-headers-amd64 (scripts/setup.sh)"
[ -e "/lib/modules/$release/build/Makefile" ] ||
  die "no /lib/modules/$release/build: install linux-headers-$release (scripts/setup.sh)"

cmake --build "$build" -j2 >&2
rm -rf "$out"
mkdir -p "$out"
(cd "$build" && cpack -G DEB -B "$out" >"$out/cpack.log" 2>&1) || {
  cat "$out/cpack.log" >&2; die "cpack failed"; }
rm -rf "$out/_CPack_Packages"

debs=("$out"/*.deb)
[ ${#debs[@]} -eq 5 ] || die "expected 5 packages in $out, got: ${debs[*]##*/}"
for deb in "${debs[@]}"; do
  log "$(basename "$deb")"
  dpkg-deb --field "$deb" Package Version Architecture Depends Installed-Size |
    sed 's/^/  /' >&2
  dpkg-deb --contents "$deb" | awk '$6 !~ /\/$/ { print "   ", $6, $7, $8 }' >&2
done

# ---- jal-dkms: dkms add + dkms build in private trees, for the guest kernel ---------------
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dpkg-deb -x "$out"/jal-dkms_*_all.deb "$work/root"
version=$(dpkg-deb -f "$out"/jal-dkms_*_all.deb Version)
trees=(--sourcetree "$work/root/usr/src" --dkmstree "$work/dkms")
mkdir -p "$work/dkms"
log "dkms build of jal $version for $release"
dkms add -m jal -v "$version" "${trees[@]}" >&2
if ! dkms build -m jal -v "$version" -k "$release" "${trees[@]}" >"$work/dkms.log" 2>&1; then
  cat "$work/dkms.log" "$work"/dkms/jal/"$version"/build/make.log >&2 2>/dev/null || true
  die "dkms build of jal.ko for $release failed"
fi
module=$(ls "$work/dkms/jal/$version/$release"/*/module/jal.ko* 2>/dev/null | head -1)
[ -n "$module" ] || { cat "$work/dkms.log" >&2; die "dkms build left no jal.ko"; }
vermagic=$(modinfo -F vermagic "$module")
[ "${vermagic%% *}" = "$release" ] || die "jal.ko has vermagic '$vermagic', not $release"
log "jal-dkms: dkms built $(basename "$module") for $release (vermagic $vermagic)"

printf '%s\n' "${debs[@]}"
