# linear/ kernels (target_sources(jal PRIVATE ...)).
