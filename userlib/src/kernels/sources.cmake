# The kernel builder, code objects and dispatch (target_sources(jal PRIVATE ...)).
target_sources(jal PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/builder.cpp)
target_link_libraries(jal PRIVATE fmt::fmt)
