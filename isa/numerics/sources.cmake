# numerics/: the element formats (target_sources(jal_isa PRIVATE ...)).
