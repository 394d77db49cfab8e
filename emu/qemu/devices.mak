# jal: the devices of our minimal x86_64 QEMU (configs/devices/x86_64-softmmu/jal.mak,
# used with --without-default-devices). q35 brings what a PC needs (ISA serial, PCIe root,
# LPC, AHCI, fw_cfg); we add our device and Intel's vIOMMU (intel-iommu), which puts the
# device's DMA behind the guest's IOMMU mappings (docs/vm.md).
CONFIG_Q35=y
CONFIG_VTD=y
CONFIG_JAL_PCI=y
