// Weights of a GGUF model decoded to double on the host, and the matrix-vector product with
// llama.cpp's rounding of the activation to the weight's vec_dot_type: the building blocks
// of the double-precision reference forward passes the tests check against.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <jal/model/gguf.hpp>

namespace jal::test {

struct HostMatrix {  // rows × cols per slice (experts or heads when slices > 0), decoded
    uint32_t rows = 0, cols = 0, slices = 0;
    jal::model::TensorType type = jal::model::TensorType::F32;
    std::vector<double> w;
};

// Decodes F32, F16, BF16, Q8_0 and MXFP4 (ggml's layouts); throws std::runtime_error for
// other types.
HostMatrix load_host_matrix(const jal::model::GgufFile& file, const std::string& name);
// An F32 vector (norms, biases).
std::vector<double> load_host_vector(const jal::model::GgufFile& file, const std::string& name);

// y = W[slice] x. With `ggml_numerics`, x is first rounded as llama.cpp's CPU backend rounds
// it for the weight's type: Q8_0 blocks for MXFP4 and Q8_0, F16 for F16, BF16 for BF16.
// Q8_0 weights always get Q8_0 activations (the chip's matrix engine does the same).
std::vector<double> host_matvec(const HostMatrix& m, const std::vector<double>& x,
                                bool ggml_numerics, uint32_t slice = 0);

// ggml's quantize_row_q8_0 then dequantization, in place (whole blocks of 32).
void round_to_q8_0(std::vector<double>& x);

}  // namespace jal::test
