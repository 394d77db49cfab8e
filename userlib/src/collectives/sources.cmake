# Collectives executed by the chips (userlib/include/jal/collectives.hpp): the communicator,
# its steps and the four collectives; the C API's jal_comm_*.
target_sources(jal PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/communicator.cpp
  ${CMAKE_CURRENT_LIST_DIR}/collective_ops.cpp
  ${CMAKE_CURRENT_LIST_DIR}/c_api_comm.cpp
)
