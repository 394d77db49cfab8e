# The kernel builder, code objects and dispatch (target_sources(jal PRIVATE ...)).
