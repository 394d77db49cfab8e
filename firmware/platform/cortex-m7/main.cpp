// The image's entry: one firmware instance in static storage (there is no heap).
#include "firmware.hpp"

namespace {
jalfw::Firmware firmware;
}

int main()
{
    firmware.run();
}
