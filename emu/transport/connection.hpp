// One client connection: decodes protocol messages, applies them to the chip as one host
// function, replies. Malformed messages get a PROTOCOL reply; the connection goes on.
#pragma once

#include <cstdint>

namespace jal::emu {

class Chip;

// Serves fd until the peer closes it or it is shut down; detaches the function at the end.
void serve_connection(Chip& chip, int fd);

}  // namespace jal::emu
