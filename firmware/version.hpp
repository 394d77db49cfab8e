// Version of this firmware image, reported in JAL_HOSTIF_FW_VERSION and IDENTIFY.
#pragma once

#include <cstdint>

namespace jal::fw {

inline constexpr std::uint32_t kFwVersionMajor = 0;
inline constexpr std::uint32_t kFwVersionMinor = 1;
inline constexpr std::uint32_t kFwVersionPatch = 0;
inline constexpr std::uint32_t kFwVersion =
    kFwVersionMajor << 16 | kFwVersionMinor << 8 | kFwVersionPatch;
inline constexpr char kFwBuild[] = "jalfw-0.1.0";
inline constexpr char kModelName[] = "Jalapeno-EMU";

}  // namespace jal::fw
