// The timing and energy model's constants, in one place (docs/tile-isa.md, "Timing" and
// docs/decisions.md, "Timing rates"). Throughputs are per slice at the nominal top clock
// (JAL_CLOCK_MAX_MHZ); everything on the slice's clock scales with the clock the firmware's
// DVFS sets. HBM and its PHY run on their own clock, so HBM bandwidth and latency do not.
#pragma once

#include "jal/hw/isa.h"
#include "jal/hw/mgmt.h"

#include <cstdint>

namespace jal::emu::exec::rates {

inline constexpr double kNominalMhz = JAL_CLOCK_MAX_MHZ;  // 2000 MHz

// Matrix engine, FLOP/s per slice at the nominal clock: the chip's 13.4 PFLOP/s MXFP4 and
// 3.4 PFLOP/s MXFP8 over 64 slices; BF16/F16 half of MXFP8, F32 a quarter of BF16 (chosen).
inline constexpr double kMmaMxfp4 = 13.4e15 / 64;  // 209.4 TFLOP/s
inline constexpr double kMmaMxfp8 = 3.4e15 / 64;   // 53.1 TFLOP/s (also Q8_0)
inline constexpr double kMmaBf16 = kMmaMxfp8 / 2;  // 26.6 TFLOP/s (also F16)
inline constexpr double kMmaF32 = kMmaBf16 / 4;    // 6.6 TFLOP/s
inline constexpr double kMmaLatencyCycles = 64;    // pipeline fill, per MMA

// Vector engine (chosen): elements per cycle.
inline constexpr double kVecElemsPerCycle = 128;   // add, mul, fma, compare, copy, fill, mask
inline constexpr double kVecTransPerCycle = 32;    // exp, rsqrt, silu, sigmoid, recip
inline constexpr double kVecConvertPerCycle = 64;  // VCVT (block scales need a pass)
inline constexpr double kVecSortPerCycle = 8;      // VTOPK / VTOPKV, per input element
inline constexpr double kVecLatencyCycles = 16;

// DMA (chosen): local HBM is the slice's three channels, 240 GB/s; another slice's HBM is
// reached over the NoC at lower bandwidth and higher latency. Not clock-scaled.
inline constexpr double kLocalHbmBytesPerNs = 240.0;  // 240 GB/s
inline constexpr double kLocalHbmLatencyNs = 500;
inline constexpr double kRemoteHbmBytesPerNs = 60.0;  // 60 GB/s per slice over the NoC
inline constexpr double kRemoteHbmLatencyNs = 900;
inline constexpr double kDmaOpCycles = 32;  // descriptor processing per op (clock-scaled)

// Collective network (chosen), clock-scaled: per-slice link bandwidth at the nominal clock,
// one-way latency, and the barrier's extra latency after the last arrival.
inline constexpr double kNetBytesPerCycle = 32;   // 64 GB/s at 2 GHz
inline constexpr double kNetLatencyCycles = 400;  // 200 ns at 2 GHz
inline constexpr double kBarrierCycles = 600;     // 300 ns at 2 GHz

// Scalar unit: one instruction a cycle; LD/LW hit a 4 KiB direct-mapped data cache of
// 64-byte lines (4 cycles) or miss to HBM (its latency); stores are write-through, posted.
inline constexpr double kScalarLoadHitCycles = 4;
inline constexpr unsigned kScalarCacheLines = 64;
inline constexpr unsigned kScalarLineBytes = 64;
// Engine ops in flight per slice; the scalar unit stalls when the queue is full.
inline constexpr unsigned kOpsInFlight = 64;

// Command processor: fixed cost of launching and retiring a dispatch (chosen).
inline constexpr double kDispatchOverheadNs = 1500;

// Energy at the nominal (maximum) core voltage, picojoules (chosen); compute and network
// energy scale with V², HBM energy does not. About 270 W for the whole chip at full
// matrix throughput in any format, 185 W at full HBM bandwidth.
inline constexpr double kPjPerFlopMxfp4 = 0.02;
inline constexpr double kPjPerFlopMxfp8 = 0.08;
inline constexpr double kPjPerFlopBf16 = 0.16;
inline constexpr double kPjPerFlopF32 = 0.64;
inline constexpr double kPjPerVectorElem = 4.0;  // F32 lane op incl. register file and L1
inline constexpr double kPjPerTranscendental = 12.0;
inline constexpr double kPjPerHbmByte = 12.0;           // 1.5 pJ/bit
inline constexpr double kPjPerRemoteByte = 12.0 + 8.0;  // plus the NoC crossing
inline constexpr double kPjPerNetByte = 6.0;
inline constexpr double kPjPerInstruction = 20.0;  // scalar core

}  // namespace jal::emu::exec::rates
