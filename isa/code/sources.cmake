# code/: code objects and disassembly (target_sources(jal_isa PRIVATE ...)).
target_sources(jal_isa PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/opcode_table.cpp
    ${CMAKE_CURRENT_LIST_DIR}/crc32.cpp
    ${CMAKE_CURRENT_LIST_DIR}/validate_instruction.cpp
    ${CMAKE_CURRENT_LIST_DIR}/validate_code_object.cpp
    ${CMAKE_CURRENT_LIST_DIR}/register_dataflow.cpp
    ${CMAKE_CURRENT_LIST_DIR}/code_object_io.cpp
    ${CMAKE_CURRENT_LIST_DIR}/disasm.cpp)
# Messages and disassembly are formatted with fmt.
target_link_libraries(jal_isa PRIVATE fmt::fmt)
# The assembler (jal-as, jal_kernel_assemble): the inverse of the disassembler.
target_sources(jal_isa PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/asm_text.cpp
    ${CMAKE_CURRENT_LIST_DIR}/asm_instruction.cpp
    ${CMAKE_CURRENT_LIST_DIR}/assembler.cpp)
