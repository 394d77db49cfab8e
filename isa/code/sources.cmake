# code/: code objects and disassembly (target_sources(jal_isa PRIVATE ...)).
