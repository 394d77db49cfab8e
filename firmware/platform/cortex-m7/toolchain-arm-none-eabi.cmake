# Debian's arm-none-eabi-gcc with picolibc, for the management core (Cortex-M7, soft
# float: the firmware's arithmetic is light and it keeps the FPU out of the boot path).
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_CXX_COMPILER arm-none-eabi-g++)
set(CMAKE_ASM_COMPILER arm-none-eabi-gcc)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
set(JAL_M7_FLAGS "-mcpu=cortex-m7 -mthumb -mfloat-abi=soft --specs=picolibcpp.specs")
set(CMAKE_C_FLAGS_INIT "${JAL_M7_FLAGS}")
set(CMAKE_CXX_FLAGS_INIT "${JAL_M7_FLAGS}")
# The compile flags (with the specs) are on the link line already.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-nostartfiles")
