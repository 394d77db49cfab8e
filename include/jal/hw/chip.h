/* Physical organisation of a Jalapeño-class chip as the device interface exposes it.
 * Values marked (chosen) are this project's choices where public reports are silent;
 * docs/device-interface.md gives the reasoning. Everything else follows the Hot Chips 2026
 * figures: 64 slices, 6 HBM4 stacks, 216 GiB. */
#ifndef JAL_HW_CHIP_H
#define JAL_HW_CHIP_H

#include "compat.h"

#define JAL_NUM_SLICES 64
#define JAL_HBM_STACKS 6
#define JAL_HBM_CHANNELS_PER_STACK 32
#define JAL_HBM_CHANNELS (JAL_HBM_STACKS * JAL_HBM_CHANNELS_PER_STACK) /* 192 */
#define JAL_HBM_CHANNELS_PER_SLICE (JAL_HBM_CHANNELS / JAL_NUM_SLICES) /* 3 */
#define JAL_HBM_CHANNEL_BYTES (1152ull * 1024 * 1024)                  /* 1.125 GiB */
#define JAL_HBM_SLICE_BYTES (JAL_HBM_CHANNEL_BYTES * JAL_HBM_CHANNELS_PER_SLICE)
#define JAL_HBM_TOTAL_BYTES (JAL_HBM_CHANNEL_BYTES * JAL_HBM_CHANNELS) /* 216 GiB */
#define JAL_HBM_DQ_LANES 64                                            /* data lanes per channel */
#define JAL_HBM_SPARE_LANES 4 /* (chosen) repair lanes per channel */
#define JAL_HBM_LANES (JAL_HBM_DQ_LANES + JAL_HBM_SPARE_LANES)
#define JAL_HBM_DELAY_TAPS 64 /* (chosen) delay-line taps per lane, read and write */
#define JAL_HBM_VREF_STEPS 32 /* (chosen) reference-voltage settings */
#define JAL_HBM_FAILED_CHANNELS_PER_STACK_MAX 4 /* (chosen) more failed channels fail the stack */

#define JAL_MIN_GOOD_SLICES 56 /* (chosen) product rule: fewer enabled slices = failed chip */

/* Device physical address map of HBM: channel c holds
 * [c * JAL_HBM_CHANNEL_BYTES, (c + 1) * JAL_HBM_CHANNEL_BYTES), and physical slice s owns
 * channels s*3 .. s*3+2, so a slice's local memory is one contiguous range. */
static inline uint64_t jal_hbm_channel_base(uint32_t channel)
{
    return (uint64_t)channel * JAL_HBM_CHANNEL_BYTES;
}
static inline uint32_t jal_hbm_channel_of(uint64_t dev_addr)
{
    return (uint32_t)(dev_addr / JAL_HBM_CHANNEL_BYTES);
}
static inline uint32_t jal_hbm_stack_of_channel(uint32_t channel)
{
    return channel / JAL_HBM_CHANNELS_PER_STACK;
}
static inline uint32_t jal_slice_of_channel(uint32_t channel)
{
    return channel / JAL_HBM_CHANNELS_PER_SLICE;
}

#endif
