#!/usr/bin/env bash
# The system test (ctest label `system`): the chip on a PCI bus in a Linux guest.
# Builds or reuses QEMU (scripts/build-qemu.sh) and the guest (scripts/build-guest.sh:
# Debian's kernel, jal.ko, a busybox initramfs with jalctl and the test programs), starts
# jal-emu, boots the guest (TCG; KVM when JAL_VM_ACCEL=kvm), and checks every step the
# guest's /init (guest_init.sh) reports, plus that `jalctl info` in the guest prints what
# it prints in direct mode. Prints the guest console on failure. The device sits behind
# QEMU's vIOMMU (intel-iommu, DMA remapping on in the guest), so it reaches only what the
# driver mapped for it (docs/vm.md).
#
#   run_vm_test.sh --jal-emu PATH --jalctl PATH --copy PATH --ioctl PATH --dma PATH --reset PATH
#                  --isolation PATH --jal-run PATH --mkmodel PATH --hang PATH
#
# Inference: a synthetic model (jal-mkmodel --preset small) decoded greedily by jal-run on the
# host's direct path and in the guest through jal.ko must give the same token ids.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
while [ $# -gt 0 ]; do
  case $1 in
    --jal-emu) emu=$2 ;;
    --jalctl) jalctl=$2 ;;
    --copy) copy=$2 ;;
    --ioctl) ioctl=$2 ;;
    --dma) dma=$2 ;;
    --reset) reset=$2 ;;
    --isolation) isolation=$2 ;;
    --jal-run) jalrun=$2 ;;
    --mkmodel) mkmodel=$2 ;;
    --hang) hang=$2 ;;
    *) echo "run_vm_test: unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done
guest_timeout=${JAL_VM_TIMEOUT:-300}  # seconds for the guest run, boot to power-off
accel=${JAL_VM_ACCEL:-tcg}

work=$(mktemp -d /tmp/jal-system.XXXXXX)
emu_pid=""
cleanup() {
  [ -n "$emu_pid" ] && kill "$emu_pid" 2>/dev/null && wait "$emu_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
t_start=$(now)

echo "== QEMU"
t=$(now)
qemu=$("$repo/scripts/build-qemu.sh")
echo "$qemu ($(elapsed "$t") s)"

# The model both paths decode (deterministic: the guest image's cache key stays the same).
model_args=(--prompt-ids 1,2,3,4,5,6,7,8 --n 16 --ids -q)
"$mkmodel" --preset small --seed 7 -q "$work/model.gguf" >/dev/null

echo "== guest"
t=$(now)
mapfile -t guest < <("$repo/scripts/build-guest.sh" --init "$here/guest_init.sh" \
  --program "$jalctl" --program "$copy" --program "$ioctl" --program "$dma" --program "$reset" \
  --program "$isolation" --program "$jalrun" --program "$hang" --file "$work/model.gguf:/model.gguf")
[ ${#guest[@]} -eq 2 ] || { echo "FAIL: scripts/build-guest.sh printed no kernel and initramfs"; exit 1; }
echo "${guest[0]} ${guest[1]} ($(elapsed "$t") s)"

echo "== jal-emu"
mkdir -p "$work/emu"
"$emu" --socket-dir "$work/emu" --log "$work/emu.log" -v &
emu_pid=$!
for _ in $(seq 300); do
  [ -S "$work/emu/jal0.sock" ] && break
  kill -0 "$emu_pid" 2>/dev/null || { cat "$work/emu.log"; echo "FAIL: jal-emu exited"; exit 1; }
  sleep 0.1
done
[ -S "$work/emu/jal0.sock" ] || { echo "FAIL: jal-emu made no socket"; exit 1; }
# Direct mode, for comparison with the guest: what jalctl prints there.
JAL_EMU_DIR=$work/emu "$jalctl" --wait 60 info >"$work/direct-info.txt" 2>&1 ||
  { cat "$work/direct-info.txt"; echo "FAIL: jalctl info in direct mode"; exit 1; }
cat "$work/direct-info.txt"
JAL_EMU_DIR=$work/emu "$jalrun" "$work/model.gguf" "${model_args[@]}" >"$work/direct-tokens.txt" ||
  { echo "FAIL: jal-run in direct mode"; exit 1; }
echo "direct tokens: $(cat "$work/direct-tokens.txt")"

echo "== guest run ($accel, timeout ${guest_timeout} s)"
t=$(now)
set +e
timeout --kill-after=10 "$guest_timeout" "$qemu" \
  -machine q35 -accel "$accel" -cpu max -smp 1 -m 512 \
  -object memory-backend-memfd,id=mem,size=512M,share=on -machine memory-backend=mem \
  -nodefaults -display none -monitor none -serial "file:$work/console.log" -no-reboot \
  -device intel-iommu,intremap=off,caching-mode=on \
  -device "jal-pci,socket=$work/emu/jal0.sock" \
  -kernel "${guest[0]}" -initrd "${guest[1]}" \
  -append "console=ttyS0 panic=-1 quiet intel_iommu=on iommu.strict=1" >"$work/qemu.log" 2>&1
qemu_rc=$?
set -e
guest_s=$(elapsed "$t")
tr -d '\r' <"$work/console.log" >"$work/console.txt" || true

failed=0
if [ $qemu_rc -ne 0 ]; then
  echo "FAIL: QEMU exited with $qemu_rc$([ $qemu_rc -eq 124 ] && echo " (timeout after ${guest_timeout} s)")"
  failed=1
fi
# Every step must report PASS; a step that never reported is a failure too.
for step in insmod jalctl-info sysfs copy msix hwmon ioctl dma-isolation context-isolation inference reset-refused reset device-reset watchdog flr rmmod dmesg; do
  line=$(grep -m1 "^JAL-TEST $step: " "$work/console.txt" || true)
  if [ -z "$line" ]; then
    echo "JAL-TEST $step: FAIL (never reported)"
    failed=1
  else
    echo "$line"
    case $line in *": PASS"*) ;; *) failed=1 ;; esac
  fi
done
# jalctl info in the guest prints what it prints in direct mode (but for where the device is).
sed -n '/^JAL-OUT jalctl-info BEGIN$/,/^JAL-OUT jalctl-info END$/p' "$work/console.txt" |
  sed '1d;$d' | grep -v '^Device:' >"$work/guest-info.txt" || true
if grep -v '^Device:' "$work/direct-info.txt" | diff -u - "$work/guest-info.txt" >"$work/info.diff"; then
  echo "JAL-TEST jalctl-info-matches-direct: PASS"
else
  echo "JAL-TEST jalctl-info-matches-direct: FAIL (differs from direct mode)"
  cat "$work/info.diff"
  failed=1
fi
# jal-run in the guest decodes the same tokens as on the direct path.
guest_tokens=$(sed -n 's/^JAL-TOKENS //p' "$work/console.txt")
if [ -n "$guest_tokens" ] && [ "$guest_tokens" = "$(cat "$work/direct-tokens.txt")" ]; then
  echo "JAL-TEST inference-matches-direct: PASS ($guest_tokens)"
else
  echo "JAL-TEST inference-matches-direct: FAIL (guest '${guest_tokens}', direct '$(cat "$work/direct-tokens.txt")')"
  failed=1
fi
grep -q '^JAL-SYSTEM: RESULT PASS' "$work/console.txt" || failed=1

if [ $failed -ne 0 ]; then
  echo "==== guest console ===="
  cat "$work/console.txt"
  echo "==== QEMU ===="
  cat "$work/qemu.log"
  echo "==== jal-emu log (last 50 lines) ===="
  tail -50 "$work/emu.log"
  echo "FAIL: system test (guest ${guest_s} s, total $(elapsed "$t_start") s)"
  exit 1
fi
sed -n '/^JAL-OUT copy BEGIN$/,/^JAL-OUT copy END$/p; /^JAL-OUT dma-isolation BEGIN$/,/^JAL-OUT dma-isolation END$/p
  /^JAL-OUT context-isolation BEGIN$/,/^JAL-OUT context-isolation END$/p
  /^JAL-OUT inference BEGIN$/,/^JAL-OUT inference END$/p
  /^JAL-OUT device-reset BEGIN$/,/^JAL-OUT device-reset END$/p
  /^JAL-OUT watchdog BEGIN$/,/^JAL-OUT watchdog END$/p
  /^hwmon /p; /^sysfs /p; /^iommu: /p' "$work/console.txt"
grep -E '^(ok|FAIL) ' "$work/console.txt" | tail -3
grep -E 'attached|detached' "$work/emu.log" # the FLR shows as a detach and a fresh attach
echo "PASS: system test (guest boot to power-off ${guest_s} s, total $(elapsed "$t_start") s)"
