# The kernel driver as DKMS sources (docs/install.md): install component jal-dkms, packaged
# by CPack as jal-dkms (cmake/packaging.cmake). The sources go to src/jal-VERSION (with the
# packages' prefix, /usr/src/jal-VERSION, where DKMS looks) with the dkms.conf made here.
# Only component installs carry them (EXCLUDE_FROM_ALL): `cmake --install` of a prefix does
# not, since DKMS only ever looks in /usr/src.
set(JAL_DKMS_DIR ${CMAKE_BINARY_DIR}/dkms)
configure_file(${PROJECT_SOURCE_DIR}/driver/dkms/dkms.conf.in ${JAL_DKMS_DIR}/dkms.conf @ONLY)
foreach(script postinst prerm)
  configure_file(${PROJECT_SOURCE_DIR}/driver/dkms/${script}.in ${JAL_DKMS_DIR}/${script} @ONLY
                 FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
                                  GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
endforeach()

set(dkms_src src/jal-${PROJECT_VERSION})
install(FILES ${JAL_DKMS_DIR}/dkms.conf DESTINATION ${dkms_src} COMPONENT jal-dkms
        EXCLUDE_FROM_ALL)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/driver DESTINATION ${dkms_src} COMPONENT jal-dkms
        EXCLUDE_FROM_ALL PATTERN dkms EXCLUDE PATTERN .* EXCLUDE)
# driver/Kbuild adds -I$(src)/../include: the device interface, as in the repository.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/jal/hw DESTINATION ${dkms_src}/include/jal
        COMPONENT jal-dkms EXCLUDE_FROM_ALL)
