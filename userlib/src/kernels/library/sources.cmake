# The kernel library (target_sources(jal PRIVATE ...)).
