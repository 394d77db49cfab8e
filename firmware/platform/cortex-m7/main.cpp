// The image's entry: one firmware instance in static storage (there is no heap).
#include "firmware/firmware.hpp"

namespace {
jal::fw::Firmware firmware;
}  // namespace

int main()
{
    firmware.run();
}
