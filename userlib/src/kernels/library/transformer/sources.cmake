# transformer/ kernels (target_sources(jal PRIVATE ...)).
