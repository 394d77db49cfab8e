// Element formats of the tile ISA (include/jal/hw/isa.h, enum jal_dtype) and conversions
// between them and F32. The exact rounding rules are in docs/numerics.md; every function
// gives bit-identical results on every host, whichever code path (scalar or AVX2) runs.
#pragma once

#include <jal/hw/isa.h>

#include <cstddef>
#include <cstdint>

namespace jal::numerics {

// ---- scalar formats ----
float bf16_to_f32(uint16_t h);          // exact; NaN stays NaN (quieted)
uint16_t f32_to_bf16(float f);          // round to nearest even; NaN stays (quiet) NaN
float f16_to_f32(uint16_t h);           // exact; NaN stays NaN (quieted)
uint16_t f32_to_f16(float f);           // IEEE half, RNE, overflow -> inf, NaN -> sign|0x7e00
float e8m0_to_f32(uint8_t e);           // 2^(e-127); 0xff -> NaN
float e8m0_to_f32_half(uint8_t e);      // 2^(e-128) (ggml's GGML_E8M0_TO_FP32_HALF); 0xff -> NaN
float fp4_e2m1_to_f32(uint8_t nibble);  // low 4 bits: sign, 2-bit exponent, 1-bit mantissa
float fp8_e4m3_to_f32(uint8_t v);       // OCP E4M3: no inf, max 448, 0x7f/0xff NaN
float fp8_e5m2_to_f32(uint8_t v);       // OCP E5M2: IEEE-like (inf, NaN)
// F32 to the 8-bit element formats: round to nearest even, saturating to the largest
// finite magnitude (448 / 57344); NaN -> 0x7f / 0x7e (with the sign bit of the input).
uint8_t f32_to_fp8_e4m3(float f);
uint8_t f32_to_fp8_e5m2(float f);
// F32 to E2M1: round to nearest even, saturating to +-6; NaN -> 0 (E2M1 has no NaN).
uint8_t f32_to_fp4_e2m1(float f);

// ---- rows of n elements (n a multiple of 32 for MXFP4, MXFP8 and Q8_0) ----
size_t element_block(jal_dtype dt);        // elements per storage block: 32 or 1; 0 if unknown
size_t block_bytes(jal_dtype dt);          // bytes per storage block; 0 if unknown
size_t row_bytes(jal_dtype dt, size_t n);  // 0 when n is not valid for dt
// Any dtype to F32 (I32: converted with RNE).
void dequantize_row(jal_dtype dt, const void* src, float* dst, size_t n);
// F32 to any dtype. mode matters for MXFP4 only (JAL_CVT_OCP or JAL_CVT_GGML); the other
// formats have one rule each (docs/numerics.md). I32: round to nearest even, saturating,
// NaN -> 0.
void quantize_row(jal_dtype dt, const float* src, void* dst, size_t n,
                  jal_cvt_mode mode = JAL_CVT_OCP);

// ---- which code path runs (for tests and jal-bench) ----
// avx512: the AVX2 path with AVX-512 kernels where there are some (the MXFP4 GEMV).
enum class Isa { scalar, avx2, avx512 };
Isa active_isa();
// Selects a path; asking for one the host lacks selects the best it has below it. Results
// are identical whichever runs; this only exists so tests can compare them.
void force_isa(Isa isa);
bool host_has_avx2();
bool host_has_avx512();  // AVX-512 F, BW, VL and VBMI (and AVX2)
Isa best_isa();          // what runs unless forced

}  // namespace jal::numerics
