# GGUF and the model runtime (target_sources(jal PRIVATE ...)).
