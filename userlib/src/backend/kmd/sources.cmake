# The kernel-driver backend (target_sources(jal PRIVATE ...)): /dev/jalN through jal.ko's
# ioctls (driver/include/uapi/jal_accel.h).
target_sources(jal PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/kmd_file.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kmd_memory.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kmd_doorbells.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kmd_admin_shim.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kmd_backend.cpp
)
target_include_directories(jal PRIVATE ${PROJECT_SOURCE_DIR}/driver/include)
