# The kernel release of the VM's guest (docs/vm.md), which jal.ko is built for: that of the
# newest installed Debian headers, /usr/src/linux-headers-6.1.0-*-amd64, unless
# JAL_GUEST_KERNEL_RELEASE names another. Sourced, not run:
#
#   release=$(guest_kernel_release)   empty when no headers are installed

guest_kernel_release() {
  if [ -n "${JAL_GUEST_KERNEL_RELEASE:-}" ]; then
    echo "$JAL_GUEST_KERNEL_RELEASE"
    return
  fi
  local headers
  headers=$(ls -d /usr/src/linux-headers-6.1.0-*-amd64 2>/dev/null | sort -V | tail -1)
  [ -z "$headers" ] || echo "${headers#/usr/src/linux-headers-}"
}
