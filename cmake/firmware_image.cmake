# Cross-builds the Cortex-M7 firmware image with Debian's arm-none-eabi-gcc as a separate
# CMake project, signs it with the development key (jal-fwsign, keys/README.md) and puts the
# signed image next to jal-emu (build/bin/jal-fw.bin), where jal-emu looks for it by default,
# with the ELF it was made from (build/bin/jal-fw.elf: the symbols and debug information
# gdb-multiarch needs with `jal-emu --gdb`). The raw flash contents stay in
# build/firmware-m7/jal-fw.bin.
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
  INSTALL_COMMAND ${CMAKE_COMMAND} -E copy_if_different ${CMAKE_BINARY_DIR}/firmware-m7/jal-fw.elf ${JAL_FW_ELF}
  BUILD_ALWAYS ON
  BUILD_BYPRODUCTS ${CMAKE_BINARY_DIR}/firmware-m7/jal-fw.bin ${JAL_FW_ELF}
  USES_TERMINAL_BUILD ON)

# The header's version is the firmware's own (firmware/version.hpp); the rollback counter is
# raised by hand when a release fixes a flaw older images must not bring back
# (docs/firmware.md 10).
set(JAL_FW_ROLLBACK 1)
file(STRINGS ${PROJECT_SOURCE_DIR}/firmware/version.hpp fw_version_lines REGEX "kFwVersion(Major|Minor|Patch) =")
foreach(part Major Minor Patch)
  string(REGEX MATCH "kFwVersion${part} = ([0-9]+)" _ "${fw_version_lines}")
  set(fw_${part} ${CMAKE_MATCH_1})
endforeach()
set(JAL_FW_VERSION_TEXT ${fw_Major}.${fw_Minor}.${fw_Patch})
add_custom_command(OUTPUT ${JAL_FW_IMAGE}
  COMMAND jal-fwsign sign --key ${PROJECT_SOURCE_DIR}/keys/dev-firmware-key.pem
          --version ${JAL_FW_VERSION_TEXT} --rollback ${JAL_FW_ROLLBACK} --build jalfw-${JAL_FW_VERSION_TEXT}
          ${CMAKE_BINARY_DIR}/firmware-m7/jal-fw.bin ${JAL_FW_IMAGE}
  DEPENDS jal-fwsign jal-fw-image ${CMAKE_BINARY_DIR}/firmware-m7/jal-fw.bin
          ${PROJECT_SOURCE_DIR}/keys/dev-firmware-key.pem
  COMMENT "Signing the firmware image with the development key")
add_custom_target(jal-fw-signed ALL DEPENDS ${JAL_FW_IMAGE})

# Installed as architecture-independent data (docs/install.md). jal-emu finds it relative to
# its own directory (emu/cli/options.cpp), so the path is passed to it relative to bin/.
set(JAL_FW_INSTALL_DIR ${CMAKE_INSTALL_DATADIR}/jal/firmware)
file(RELATIVE_PATH JAL_FW_IMAGE_FROM_BINDIR ${CMAKE_INSTALL_FULL_BINDIR}
     ${CMAKE_INSTALL_FULL_DATADIR}/jal/firmware)
# The ELF beside it: symbols for gdb-multiarch with `jal-emu --gdb` and addr2line on a fault.
install(FILES ${JAL_FW_IMAGE} ${JAL_FW_ELF} DESTINATION ${JAL_FW_INSTALL_DIR} COMPONENT jal-emu)
