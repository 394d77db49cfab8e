# jal: the devices of our minimal x86_64 QEMU (configs/devices/x86_64-softmmu/jal.mak,
# used with --without-default-devices). q35 brings what a PC needs (ISA serial, PCIe root,
# LPC, AHCI, fw_cfg); we add our device and nothing else.
CONFIG_Q35=y
CONFIG_JAL_PCI=y
