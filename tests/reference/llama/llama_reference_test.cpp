// Synthetic GPT-OSS models (jal-mkmodel) run on llama.cpp (jal-llama-ref).
#include <gtest/gtest.h>
