# Post-link check of the firmware image: print its sizes, refuse heap, exception and
# stdio machinery, and write the flat binary that is flashed (and that jal-emu runs).
execute_process(COMMAND arm-none-eabi-size -A -d ${ELF} OUTPUT_VARIABLE sections)
execute_process(COMMAND arm-none-eabi-size ${ELF} OUTPUT_VARIABLE summary)
message(STATUS "firmware image sizes:\n${summary}")

execute_process(COMMAND arm-none-eabi-nm --defined-only ${ELF} OUTPUT_VARIABLE symbols)
set(forbidden
  malloc calloc realloc free _sbrk sbrk _malloc_r _free_r           # heap
  _Znwj _Znaj _ZnwjRKSt9nothrow_t                                  # operator new
  __cxa_allocate_exception __cxa_throw __gxx_personality_v0 _Unwind_Resume __cxa_begin_catch  # exceptions
  printf fprintf sprintf snprintf vfprintf puts fputs putchar fwrite fputc stdout stderr)  # stdio
set(found "")
foreach(sym ${forbidden})
  if(symbols MATCHES "[ \t][A-Za-z][ \t]${sym}\n")
    list(APPEND found ${sym})
  endif()
endforeach()
if(found)
  message(FATAL_ERROR "firmware image links forbidden symbols: ${found}")
endif()

execute_process(COMMAND arm-none-eabi-objcopy -O binary ${ELF} ${BIN} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "objcopy failed")
endif()
file(SIZE ${BIN} bin_size)
if(bin_size GREATER 524288)
  message(FATAL_ERROR "firmware image is ${bin_size} bytes; flash holds 524288")
endif()
