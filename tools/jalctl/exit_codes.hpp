#pragma once

namespace jal::ctl {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;   // the device is missing, failed, or did not answer
constexpr int kExitUsage = 2;     // bad command line
constexpr int kExitRefused = 3;   // refused to disturb other clients (jalctl reset without --force)
constexpr int kExitDegraded = 4;  // jalctl health: ready, but with lost capacity or hot
constexpr int kExitFailed = 5;    // jalctl health: failed, or not ready after --wait

}  // namespace jal::ctl
