# The kernel-driver backend (target_sources(jal PRIVATE ...)).
