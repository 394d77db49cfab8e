#pragma once

namespace jal::ctl {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;  // the device is missing, failed, or did not answer
constexpr int kExitUsage = 2;    // bad command line

}  // namespace jal::ctl
