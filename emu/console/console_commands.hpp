// The bring-up console's commands: inspect and poke a chip's models, including what the
// firmware can never see (the PHY's true eyes). One line in, one JSON document out.
#pragma once

#include <string>

namespace jal::emu {

class Chip;

// Executes one command line on the management-core thread's view of `chip` and returns
// a single-line JSON document: {"ok":true,...} or {"ok":false,"error":"..."}.
std::string run_console_command(Chip& chip, const std::string& line);

}  // namespace jal::emu
