# The kernel builder, code objects and dispatch (target_sources(jal PRIVATE ...)).
target_sources(jal PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/builder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/program.cpp
  ${CMAKE_CURRENT_LIST_DIR}/args.cpp
  ${CMAKE_CURRENT_LIST_DIR}/dispatch_failure.cpp
  ${CMAKE_CURRENT_LIST_DIR}/launcher.cpp
  ${CMAKE_CURRENT_LIST_DIR}/launcher_stages.cpp
  ${CMAKE_CURRENT_LIST_DIR}/link_stages.cpp
  ${CMAKE_CURRENT_LIST_DIR}/c_api_kernel.cpp)
target_link_libraries(jal PRIVATE fmt::fmt)
