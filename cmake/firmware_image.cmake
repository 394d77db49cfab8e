# Cross-builds the Cortex-M7 firmware image with Debian's arm-none-eabi-gcc as a separate
# CMake project, and puts the flat image next to jal-emu (build/bin/jal-fw.bin), where
# jal-emu looks for it by default, with the ELF it was made from (build/bin/jal-fw.elf: the
# symbols and debug information gdb-multiarch needs with `jal-emu --gdb`).
include(ExternalProject)
set(JAL_FW_IMAGE ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/jal-fw.bin)
set(JAL_FW_ELF ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/jal-fw.elf)
ExternalProject_Add(jal-fw-image
  SOURCE_DIR ${PROJECT_SOURCE_DIR}/firmware/platform/cortex-m7
  BINARY_DIR ${CMAKE_BINARY_DIR}/firmware-m7
  CMAKE_GENERATOR Ninja
  CMAKE_ARGS
    -DCMAKE_TOOLCHAIN_FILE=${PROJECT_SOURCE_DIR}/firmware/platform/cortex-m7/toolchain-arm-none-eabi.cmake
    -DCMAKE_BUILD_TYPE=MinSizeRel
  INSTALL_COMMAND ${CMAKE_COMMAND} -E copy_if_different ${CMAKE_BINARY_DIR}/firmware-m7/jal-fw.bin ${JAL_FW_IMAGE}
          COMMAND ${CMAKE_COMMAND} -E copy_if_different ${CMAKE_BINARY_DIR}/firmware-m7/jal-fw.elf ${JAL_FW_ELF}
  BUILD_ALWAYS ON
  BUILD_BYPRODUCTS ${JAL_FW_IMAGE} ${JAL_FW_ELF}
  USES_TERMINAL_BUILD ON)

# Installed as architecture-independent data (docs/install.md). jal-emu finds it relative to
# its own directory (emu/cli/options.cpp), so the path is passed to it relative to bin/.
set(JAL_FW_INSTALL_DIR ${CMAKE_INSTALL_DATADIR}/jal/firmware)
file(RELATIVE_PATH JAL_FW_IMAGE_FROM_BINDIR ${CMAKE_INSTALL_FULL_BINDIR}
     ${CMAKE_INSTALL_FULL_DATADIR}/jal/firmware)
# The ELF beside it: symbols for gdb-multiarch with `jal-emu --gdb` and addr2line on a fault.
install(FILES ${JAL_FW_IMAGE} ${JAL_FW_ELF} DESTINATION ${JAL_FW_INSTALL_DIR} COMPONENT jal-emu)
