# The model runtime: weights on the chip, prefill/decode graphs, sampling, batching (target_sources(jal PRIVATE ...)).
