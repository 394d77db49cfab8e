# The firmware's portable sources, relative to firmware/: shared by the native build
# (firmware/CMakeLists.txt, plus hal/native) and the Cortex-M7 image
# (platform/cortex-m7, plus hal/target).
set(JALFW_SOURCES
  firmware.cpp
  hbm/hbm_state.cpp
  hbm/trainer.cpp
  links/link_manager.cpp
  memory/address_spaces.cpp
  memory/exports.cpp
  memory/page_allocator.cpp
  host/admin_commands.cpp
  host/admin_firmware.cpp
  host/admin_links.cpp
  host/admin_resources.cpp
  host/admin_windows.cpp
  host/admin_queues.cpp
  host/debug_faults.cpp
  host/event_log.cpp
  host/journal.cpp
  host/reply_writer.cpp
  power/limiter.cpp
  power/power_manager.cpp
  queues/user_queues.cpp
  slices/slice_manager.cpp
  util/text.cpp)
