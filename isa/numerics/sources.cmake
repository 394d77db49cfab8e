# numerics/: the element formats, conversions, MMA and the vector engine's math
# (docs/numerics.md). Results must be bit-identical in the scalar, AVX2 and AVX-512 paths, so no
# file here lets the compiler fuse a multiply and an add on its own.
set(_jal_numerics_sources
  ${CMAKE_CURRENT_LIST_DIR}/scalar_formats.cpp
  ${CMAKE_CURRENT_LIST_DIR}/mx_scale.cpp
  ${CMAKE_CURRENT_LIST_DIR}/rows.cpp
  ${CMAKE_CURRENT_LIST_DIR}/isa_select.cpp
  ${CMAKE_CURRENT_LIST_DIR}/mma.cpp
  ${CMAKE_CURRENT_LIST_DIR}/mma_avx2.cpp
  ${CMAKE_CURRENT_LIST_DIR}/mma_avx2_gemv.cpp
  ${CMAKE_CURRENT_LIST_DIR}/mma_avx512_gemv.cpp
  ${CMAKE_CURRENT_LIST_DIR}/mma_avx512_columns.cpp
  ${CMAKE_CURRENT_LIST_DIR}/mma_kmajor.cpp
  ${CMAKE_CURRENT_LIST_DIR}/vector_math.cpp)
target_sources(jal_isa PRIVATE ${_jal_numerics_sources})
set_source_files_properties(${_jal_numerics_sources} PROPERTIES COMPILE_OPTIONS "-ffp-contract=off")
