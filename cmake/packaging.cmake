# Debian packages of an install (docs/install.md): `cpack -G DEB` in the build directory
# writes one package per install component:
#   libjal      libjal.so.0 (the run-time library)
#   libjal-dev  headers, the libjal.so link, the CMake package and the pkg-config file
#   jal-tools   jalctl, jal-run, jal-serve, jal-bench, jal-mkmodel, jal-objdump, jal-as
#   jal-emu     jal-emu and its firmware image
#   jal-dkms    the kernel driver's sources for DKMS (cmake/dkms.cmake)
# Run-time dependencies are found by dpkg-shlibdeps from the programs and the library (libjal
# from the sibling package), so they follow what the build actually linked.
set(CPACK_PACKAGE_NAME jal)
set(CPACK_PACKAGE_VENDOR "Jalapeno project")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Open software stack of Jalapeno LLM inference accelerators")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_COMPONENTS_ALL libjal libjal-dev jal-tools jal-emu jal-dkms)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # name_version_arch.deb
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "Jalapeno developers <jal@invalid>")
set(CPACK_DEBIAN_PACKAGE_SECTION misc)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# libjal.so.0 is in no installed package: dpkg-shlibdeps finds it in the build tree (CPack
# passes --ignore-missing-info), and the component dependency below adds it as libjal0.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_LIBRARY_OUTPUT_DIRECTORY})
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)  # the DEPENDS below become Depends: with versions

set(CPACK_COMPONENT_LIBJAL_DESCRIPTION "Runtime library of Jalapeno LLM accelerators (libjal)")
set(CPACK_DEBIAN_LIBJAL_PACKAGE_NAME libjal${PROJECT_VERSION_MAJOR})  # Debian: the SONAME's number
set(CPACK_DEBIAN_LIBJAL_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_LIBJAL-DEV_DESCRIPTION "libjal development files (headers, CMake package, pkg-config)")
set(CPACK_COMPONENT_LIBJAL-DEV_DEPENDS libjal)
set(CPACK_DEBIAN_LIBJAL-DEV_PACKAGE_NAME libjal-dev)
set(CPACK_DEBIAN_LIBJAL-DEV_PACKAGE_SECTION libdevel)
# jal.pc's Requires.private: pkg-config --cflags needs liburing.pc.
set(CPACK_DEBIAN_LIBJAL-DEV_PACKAGE_DEPENDS liburing-dev)
set(CPACK_COMPONENT_JAL-TOOLS_DESCRIPTION "Jalapeno tools: jalctl, jal-run, jal-serve, jal-bench, jal-mkmodel, jal-objdump, jal-as")
set(CPACK_COMPONENT_JAL-TOOLS_DEPENDS libjal)
set(CPACK_DEBIAN_JAL-TOOLS_PACKAGE_NAME jal-tools)
set(CPACK_COMPONENT_JAL-EMU_DESCRIPTION "Functional emulator of Jalapeno chips (jal-emu) and its firmware image")
set(CPACK_DEBIAN_JAL-EMU_PACKAGE_NAME jal-emu)
include(${CMAKE_CURRENT_LIST_DIR}/dkms.cmake)
set(CPACK_COMPONENT_JAL-DKMS_DESCRIPTION "Linux kernel driver of Jalapeno chips (jal.ko), built by DKMS")
set(CPACK_DEBIAN_JAL-DKMS_PACKAGE_NAME jal-dkms)
set(CPACK_DEBIAN_JAL-DKMS_PACKAGE_ARCHITECTURE all)  # sources only
set(CPACK_DEBIAN_JAL-DKMS_PACKAGE_SECTION kernel)
set(CPACK_DEBIAN_JAL-DKMS_PACKAGE_DEPENDS dkms)
set(CPACK_DEBIAN_JAL-DKMS_PACKAGE_CONTROL_EXTRA ${JAL_DKMS_DIR}/postinst ${JAL_DKMS_DIR}/prerm)
set(CPACK_DEBIAN_JAL-DKMS_PACKAGE_CONTROL_STRICT_PERMISSION ON)

include(CPack)
