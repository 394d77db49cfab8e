/* The management core's view of the I/O chiplet: its memory map and the peripheral
 * registers the firmware drives. This is the contract between firmware/ and the
 * emulator's peripheral models (emu/mgmt); the host never sees these addresses.
 *
 * Every register is 32 bits. Each access costs JAL_MGMT_MMIO_NS of modelled time, so
 * firmware poll loops advance the clock whether the image runs on Unicorn or natively. */
#ifndef JAL_HW_MGMT_H
#define JAL_HW_MGMT_H

#include "chip.h"
#include "compat.h"

/* Memory map (Cortex-M7). */
#define JAL_MGMT_FLASH_BASE 0x00000000u
#define JAL_MGMT_FLASH_SIZE 0x00080000u /* 512 KiB image */
#define JAL_MGMT_SRAM_BASE 0x20000000u
#define JAL_MGMT_SRAM_SIZE 0x00040000u /* 256 KiB */
#define JAL_MGMT_PERIPH_BASE 0x40000000u
#define JAL_MGMT_PERIPH_SIZE 0x00010000u
#define JAL_MGMT_CORE_HZ 400000000u /* (chosen) modelled core clock, 1 instruction/cycle */
#define JAL_MGMT_MMIO_NS 50u        /* modelled cost of one peripheral access */
#define JAL_MGMT_MAX_FUNCS 8        /* host functions (admin queue pairs) served */

#define JAL_MGMT_REG(block, off) (JAL_MGMT_PERIPH_BASE + (block) + (off))

/* ---- SYS: time, events, reset cause, console ---- */
#define JAL_MGMT_SYS 0x0000u
#define JAL_SYS_ID JAL_MGMT_REG(JAL_MGMT_SYS, 0x00) /* RO JAL_SYS_ID_MAGIC */
#define JAL_SYS_NOW_US_LO \
    JAL_MGMT_REG(JAL_MGMT_SYS, 0x04) /* RO modelled µs; reading LO latches HI */
#define JAL_SYS_NOW_US_HI JAL_MGMT_REG(JAL_MGMT_SYS, 0x08)
#define JAL_SYS_EVENTS JAL_MGMT_REG(JAL_MGMT_SYS, 0x0c)       /* RO pending JAL_EV_* */
#define JAL_SYS_EVENTS_CLEAR JAL_MGMT_REG(JAL_MGMT_SYS, 0x10) /* W1C */
#define JAL_SYS_TICK_US JAL_MGMT_REG(JAL_MGMT_SYS, 0x14) /* RW tick period; reset 1000, 0 stops */
#define JAL_SYS_RESET_CAUSE JAL_MGMT_REG(JAL_MGMT_SYS, 0x18) /* RO JAL_RESET_CAUSE_* of this boot */
#define JAL_SYS_BOOT_COUNT JAL_MGMT_REG(JAL_MGMT_SYS, 0x1c)  /* RO boots since power-on, from 1 */
#define JAL_SYS_CHIP_INDEX JAL_MGMT_REG(JAL_MGMT_SYS, 0x20)  /* RO */
#define JAL_SYS_CONSOLE \
    JAL_MGMT_REG(JAL_MGMT_SYS, 0x24) /* W one byte of log text; '\n' ends a line */
#define JAL_SYS_RESET_REQ \
    JAL_MGMT_REG(JAL_MGMT_SYS, 0x28) /* W JAL_RESET_MAGIC: reset the whole chip */
#define JAL_SYS_FAULT_INJECT \
    JAL_MGMT_REG(JAL_MGMT_SYS, 0x2c) /* RO debug faults armed by the emulator */
#define JAL_SYS_WDT_RESETS JAL_MGMT_REG(JAL_MGMT_SYS, 0x30) /* RO watchdog resets since power-on */
/* RW retained across chip and watchdog resets, zero at power-on (an always-on domain's
 * scratch registers): where the firmware keeps settings that outlive a reset (since 1.6). */
#define JAL_SYS_RETAIN(n) JAL_MGMT_REG(JAL_MGMT_SYS, 0x40 + 4 * (n))
#define JAL_SYS_RETAIN_COUNT 4
#define JAL_RETAIN_POWER_LIMIT 0 /* persistent power limit, mW; 0: none (the TDP) */
#define JAL_RETAIN_LOG_NEXT 1    /* the event log's next sequence number + 1; 0: empty (1.7) */

#define JAL_SYS_ID_MAGIC 0x4d474d54u /* 'MGMT' */

#define JAL_EV_TICK (1u << 0)  /* the tick period elapsed */
#define JAL_EV_HOST (1u << 1)  /* a host function changed admin registers or rang a doorbell */
#define JAL_EV_FUNC (1u << 2)  /* a host function attached or detached (HOSTIF_FUNC_PRESENT) */
#define JAL_EV_FAULT (1u << 3) /* the bring-up console queued a fault request (FAULT, 1.7) */

#define JAL_RESET_CAUSE_POWER_ON 0
#define JAL_RESET_CAUSE_HOST 1 /* JAL_REG_RESET or an admin RESET command */
#define JAL_RESET_CAUSE_WATCHDOG 2

/* ---- WDT: watchdog; expiry resets the management core (not the host interface) ---- */
#define JAL_MGMT_WDT 0x0100u
#define JAL_WDT_CTRL JAL_MGMT_REG(JAL_MGMT_WDT, 0x00)       /* RW bit 0 enable */
#define JAL_WDT_TIMEOUT_MS JAL_MGMT_REG(JAL_MGMT_WDT, 0x04) /* RW */
#define JAL_WDT_FEED JAL_MGMT_REG(JAL_MGMT_WDT, 0x08)       /* W JAL_WDT_FEED_MAGIC */
#define JAL_WDT_FEED_MAGIC 0x46454544u                      /* 'FEED' */

/* ---- HOSTIF: the host-visible register file, seen from the firmware side ---- */
#define JAL_MGMT_HOSTIF 0x1000u
#define JAL_HOSTIF_STATUS JAL_MGMT_REG(JAL_MGMT_HOSTIF, 0x00)      /* RW -> JAL_REG_STATUS */
#define JAL_HOSTIF_BOOT_STATUS JAL_MGMT_REG(JAL_MGMT_HOSTIF, 0x04) /* RW -> JAL_REG_BOOT_STATUS */
#define JAL_HOSTIF_POST_CODE \
    JAL_MGMT_REG(JAL_MGMT_HOSTIF, 0x08)                      /* RW -> JAL_REG_POST_CODE; logged */
#define JAL_HOSTIF_FAULT JAL_MGMT_REG(JAL_MGMT_HOSTIF, 0x0c) /* RW -> JAL_REG_FAULT */
#define JAL_HOSTIF_FW_VERSION JAL_MGMT_REG(JAL_MGMT_HOSTIF, 0x10) /* RW -> JAL_REG_FW_VERSION */
#define JAL_HOSTIF_VERSION JAL_MGMT_REG(JAL_MGMT_HOSTIF, 0x14)    /* RW -> JAL_REG_VERSION */
#define JAL_HOSTIF_CAP JAL_MGMT_REG(JAL_MGMT_HOSTIF, 0x18)        /* RW -> JAL_REG_CAP */
#define JAL_HOSTIF_FUNC_PRESENT \
    JAL_MGMT_REG(JAL_MGMT_HOSTIF, 0x20) /* RO bit per attached function */
#define JAL_HOSTIF_FUNC_EVENTS \
    JAL_MGMT_REG(JAL_MGMT_HOSTIF, 0x24)                    /* W1C bit per function with news */
#define JAL_HOSTIF_MSI JAL_MGMT_REG(JAL_MGMT_HOSTIF, 0x28) /* W fn << 16 | vector */
/* RO: what one host function may hold, set by the platform (jal-emu --max-contexts-per-client,
 * --max-queues-per-client): contexts [15:0], user queues [31:16]; 0 = no limit. */
#define JAL_HOSTIF_FN_LIMITS JAL_MGMT_REG(JAL_MGMT_HOSTIF, 0x2c)
/* RO (since 1.4): device memory one host function may hold over all its contexts, in
 * JAL_PAGE_SIZE pages counting every replica, set by jal-emu --max-memory-per-client;
 * 0 = no limit. */
#define JAL_HOSTIF_FN_MEM_LIMIT JAL_MGMT_REG(JAL_MGMT_HOSTIF, 0x30)
/* W (since 1.10): any value moves JAL_REG_ADMIN_PROGRESS on by one. */
#define JAL_HOSTIF_ADMIN_PROGRESS JAL_MGMT_REG(JAL_MGMT_HOSTIF, 0x34)
/* One bank per host function: a mirror of that function's admin registers. */
#define JAL_HOSTIF_FN(fn, off) JAL_MGMT_REG(JAL_MGMT_HOSTIF, 0x100u + (fn)*0x40u + (off))
#define JAL_FN_SQ_BASE_LO 0x00 /* RO host-written */
#define JAL_FN_SQ_BASE_HI 0x04
#define JAL_FN_CQ_BASE_LO 0x08
#define JAL_FN_CQ_BASE_HI 0x0c
#define JAL_FN_QSIZE 0x10
#define JAL_FN_CTRL 0x14         /* RO JAL_ADMIN_CTRL_* as written by the host */
#define JAL_FN_ADMIN_STATUS 0x18 /* RW -> that function's JAL_REG_ADMIN_STATUS */
#define JAL_FN_SQ_TAIL 0x1c      /* RO last doorbell value */
#define JAL_FN_CQ_HEAD 0x20      /* RO last doorbell value */
#define JAL_FN_GENERATION \
    0x24 /* RO bumps on attach, detach, every host write to ADMIN_CTRL
                                 * and every chip/core reset: firmware drops any queue state
                                 * it holds for an older generation */
#define JAL_FN_ATTACHES \
    0x28 /* RO bumps only when a client attaches or detaches: owned
                                 * contexts and queues belong to one attachment */
#define JAL_FN_CONTEXTS \
    0x2c /* RW (since 1.5) contexts the function holds, published by
                                 * firmware for the platform's client list; 0 on attach,
                                 * detach and reset */

/* ---- DMA: copies between management-core memory and a host function's memory.
 * Write HOST_LO/HI, LOCAL, LEN, FUNC, then CTRL; the copy completes before the CTRL write
 * returns and STATUS holds its jal_status (JAL_STATUS_DMA_FAULT for unmapped host memory,
 * JAL_STATUS_NO_DEVICE for a detached function). ---- */
#define JAL_MGMT_DMA 0x2000u
#define JAL_DMA_HOST_LO JAL_MGMT_REG(JAL_MGMT_DMA, 0x00)
#define JAL_DMA_HOST_HI JAL_MGMT_REG(JAL_MGMT_DMA, 0x04)
#define JAL_DMA_LOCAL JAL_MGMT_REG(JAL_MGMT_DMA, 0x08)
#define JAL_DMA_LEN JAL_MGMT_REG(JAL_MGMT_DMA, 0x0c)
#define JAL_DMA_FUNC JAL_MGMT_REG(JAL_MGMT_DMA, 0x10)
#define JAL_DMA_CTRL JAL_MGMT_REG(JAL_MGMT_DMA, 0x14) /* W JAL_DMA_GO | direction */
#define JAL_DMA_STATUS JAL_MGMT_REG(JAL_MGMT_DMA, 0x18)
#define JAL_DMA_GO (1u << 0)
#define JAL_DMA_TO_HOST (1u << 1)
#define JAL_DMA_LEN_MAX 0x10000u

/* ---- SLICE: reset, self-test, fuses and the published enable map. 64-bit masks are
 * LO (slices 0-31) / HI (32-63) pairs. ---- */
#define JAL_MGMT_SLICE 0x3000u
#define JAL_SLICE_FUSE_LO JAL_MGMT_REG(JAL_MGMT_SLICE, 0x00) /* RO 1 = fused off */
#define JAL_SLICE_FUSE_HI JAL_MGMT_REG(JAL_MGMT_SLICE, 0x04)
#define JAL_SLICE_RESET_LO JAL_MGMT_REG(JAL_MGMT_SLICE, 0x08) /* RW 1 = out of reset */
#define JAL_SLICE_RESET_HI JAL_MGMT_REG(JAL_MGMT_SLICE, 0x0c)
#define JAL_SLICE_BIST_START_LO JAL_MGMT_REG(JAL_MGMT_SLICE, 0x10) /* W1S start self-test */
#define JAL_SLICE_BIST_START_HI JAL_MGMT_REG(JAL_MGMT_SLICE, 0x14)
#define JAL_SLICE_BIST_DONE_LO JAL_MGMT_REG(JAL_MGMT_SLICE, 0x18) /* RO */
#define JAL_SLICE_BIST_DONE_HI JAL_MGMT_REG(JAL_MGMT_SLICE, 0x1c)
#define JAL_SLICE_BIST_PASS_LO JAL_MGMT_REG(JAL_MGMT_SLICE, 0x20) /* RO valid when DONE */
#define JAL_SLICE_BIST_PASS_HI JAL_MGMT_REG(JAL_MGMT_SLICE, 0x24)
#define JAL_SLICE_ENABLE_LO JAL_MGMT_REG(JAL_MGMT_SLICE, 0x28) /* RW published enabled map */
#define JAL_SLICE_ENABLE_HI JAL_MGMT_REG(JAL_MGMT_SLICE, 0x2c)
#define JAL_SLICE_GATE_LO JAL_MGMT_REG(JAL_MGMT_SLICE, 0x30) /* RW 1 = power-gated */
#define JAL_SLICE_GATE_HI JAL_MGMT_REG(JAL_MGMT_SLICE, 0x34)
#define JAL_SLICE_BUSY_LO JAL_MGMT_REG(JAL_MGMT_SLICE, 0x38) /* RO 1 = running work */
#define JAL_SLICE_BUSY_HI JAL_MGMT_REG(JAL_MGMT_SLICE, 0x3c)
#define JAL_SLICE_BIST_US 400u   /* modelled self-test time of a good slice */
#define JAL_SLICE_RESET_GROUP 8u /* (chosen) slices released from reset at once (inrush) */
#define JAL_SLICE_RESET_SETTLE_US 20u

/* ---- HBM: per-channel PHY training. Select a channel (and a lane for per-lane
 * registers), then issue commands. Each HBM stack has one training engine: a CMD write
 * returns at once and occupies the channel's stack engine for the command's cost; reading
 * the channel's RESULT0-2 or ERRORS waits until that engine is done, so channels of
 * different stacks train in parallel. Result masks cover physical lanes 0-31, 32-63,
 * 64-67 (spares). ---- */
#define JAL_MGMT_HBM 0x4000u
#define JAL_HBM_CH_SEL JAL_MGMT_REG(JAL_MGMT_HBM, 0x00)
#define JAL_HBM_LANE_SEL JAL_MGMT_REG(JAL_MGMT_HBM, 0x04)
#define JAL_HBM_RD_DELAY JAL_MGMT_REG(JAL_MGMT_HBM, 0x08)    /* RW selected lane's read tap */
#define JAL_HBM_WR_DELAY JAL_MGMT_REG(JAL_MGMT_HBM, 0x0c)    /* RW selected lane's write tap */
#define JAL_HBM_VREF JAL_MGMT_REG(JAL_MGMT_HBM, 0x10)        /* RW channel Vref step */
#define JAL_HBM_WRLVL_DELAY JAL_MGMT_REG(JAL_MGMT_HBM, 0x14) /* RW channel DQS-to-clock tap */
#define JAL_HBM_CMD JAL_MGMT_REG(JAL_MGMT_HBM, 0x18)         /* W JAL_HBM_CMD_* */
#define JAL_HBM_RESULT0 JAL_MGMT_REG(JAL_MGMT_HBM, 0x1c)     /* RO pass bits lanes 0-31 */
#define JAL_HBM_RESULT1 JAL_MGMT_REG(JAL_MGMT_HBM, 0x20)     /* lanes 32-63 */
#define JAL_HBM_RESULT2 JAL_MGMT_REG(JAL_MGMT_HBM, 0x24)     /* lanes 64-67 */
#define JAL_HBM_ERRORS JAL_MGMT_REG(JAL_MGMT_HBM, 0x28)      /* RO memtest error count */
#define JAL_HBM_REMAP JAL_MGMT_REG(JAL_MGMT_HBM, 0x2c)     /* W spare << 8 | dq lane (0xff: none) */
#define JAL_HBM_CH_ENABLE JAL_MGMT_REG(JAL_MGMT_HBM, 0x30) /* RW 1 = channel in service */
#define JAL_HBM_TEMP_MC JAL_MGMT_REG(JAL_MGMT_HBM, 0x34)   /* RO selected channel's stack temp */
/* RO the selected channel's ECC counts since power-on (since 1.6) */
#define JAL_HBM_ECC_CORRECTED JAL_MGMT_REG(JAL_MGMT_HBM, 0x38)
#define JAL_HBM_ECC_UNCORRECTED JAL_MGMT_REG(JAL_MGMT_HBM, 0x3c)

#define JAL_HBM_LANE_ALL 0xffu  /* LANE_SEL value: delay writes apply to every lane */
#define JAL_HBM_CMD_US 2u       /* modelled cost of a CONNECT/WRLVL/READ/WRITE test */
#define JAL_HBM_MEMTEST_US 200u /* modelled cost of a channel memtest */

#define JAL_HBM_CMD_CONNECT 1    /* result: lanes with working connectivity */
#define JAL_HBM_CMD_WRLVL 2      /* result bit 0: DQS sampled clock high at WRLVL_DELAY */
#define JAL_HBM_CMD_READ_TEST 3  /* result: lanes whose read pattern passed at current taps */
#define JAL_HBM_CMD_WRITE_TEST 4 /* result: lanes whose write pattern passed */
#define JAL_HBM_CMD_MEMTEST 5    /* ERRORS: failing words through in-use lanes; 0 = pass */
#define JAL_HBM_CMD_RESET 6      /* clear the channel's taps, Vref, remap and enable */

/* ---- POWER: sensors, clock and voltage. The power model reads these settings; a clock
 * above what the core voltage supports (jal_vf_min_mv) is a timing violation the
 * emulator reports. ---- */
#define JAL_MGMT_POWER 0x5000u
#define JAL_PWR_POWER_MW JAL_MGMT_REG(JAL_MGMT_POWER, 0x00) /* RO package power */
#define JAL_PWR_RAIL_CURRENT_MA(r) JAL_MGMT_REG(JAL_MGMT_POWER, 0x04 + 4 * (r))
#define JAL_PWR_RAIL_VOLTAGE_MV(r) JAL_MGMT_REG(JAL_MGMT_POWER, 0x14 + 4 * (r))
#define JAL_PWR_TEMP_JUNCTION_MC JAL_MGMT_REG(JAL_MGMT_POWER, 0x24)
#define JAL_PWR_TEMP_HBM_MC JAL_MGMT_REG(JAL_MGMT_POWER, 0x28)
#define JAL_PWR_TEMP_AMBIENT_MC JAL_MGMT_REG(JAL_MGMT_POWER, 0x2c)
#define JAL_PWR_CLOCK_MHZ JAL_MGMT_REG(JAL_MGMT_POWER, 0x30)    /* RW compute clock */
#define JAL_PWR_VOLTAGE_MV JAL_MGMT_REG(JAL_MGMT_POWER, 0x34)   /* RW core voltage */
#define JAL_PWR_ENERGY_UJ_LO JAL_MGMT_REG(JAL_MGMT_POWER, 0x38) /* RO; reading LO latches HI */
#define JAL_PWR_ENERGY_UJ_HI JAL_MGMT_REG(JAL_MGMT_POWER, 0x3c)
#define JAL_PWR_ACTIVITY_PM JAL_MGMT_REG(JAL_MGMT_POWER, 0x40) /* RO utilisation, per mille */
#define JAL_PWR_ECC_CORRECTED JAL_MGMT_REG(JAL_MGMT_POWER, 0x44)
#define JAL_PWR_ECC_UNCORRECTED JAL_MGMT_REG(JAL_MGMT_POWER, 0x48)

/* ---- MMU: per-context translation of device virtual addresses to HBM, 2 MiB pages.
 * Program CTX, VA, PA (and FLAGS), then write CMD; STATUS holds the jal_status. A
 * replicated page has one physical page per replica: each MAP with JAL_MMU_F_ADD_REPLICA
 * adds one, and an access from a slice uses the replica on that slice (else the first). ---- */
#define JAL_MGMT_MMU 0x6000u
#define JAL_MMU_CTX JAL_MGMT_REG(JAL_MGMT_MMU, 0x00)
#define JAL_MMU_VA_LO JAL_MGMT_REG(JAL_MGMT_MMU, 0x04)
#define JAL_MMU_VA_HI JAL_MGMT_REG(JAL_MGMT_MMU, 0x08)
#define JAL_MMU_PA_LO JAL_MGMT_REG(JAL_MGMT_MMU, 0x0c) /* RW; LOOKUP writes the result here */
#define JAL_MMU_PA_HI JAL_MGMT_REG(JAL_MGMT_MMU, 0x10)
#define JAL_MMU_FLAGS \
    JAL_MGMT_REG(JAL_MGMT_MMU, 0x14) /* JAL_MMU_F_* for MAP; replica index for LOOKUP */
#define JAL_MMU_CMD JAL_MGMT_REG(JAL_MGMT_MMU, 0x18)
#define JAL_MMU_STATUS JAL_MGMT_REG(JAL_MGMT_MMU, 0x1c)
#define JAL_MMU_CMD_MAP 1       /* VA -> PA (replaces, unless ADD_REPLICA) */
#define JAL_MMU_CMD_UNMAP 2     /* VA and all its replicas */
#define JAL_MMU_CMD_LOOKUP 3    /* PA of replica FLAGS of VA; STATUS PAGE_FAULT if unmapped */
#define JAL_MMU_CMD_FLUSH_CTX 4 /* drop every mapping of CTX */
/* Zero the physical page at PA (since 1.4). The core stalls until the page is written, at
 * the owning slice's HBM bandwidth; the firmware scrubs every page it frees. */
#define JAL_MMU_CMD_SCRUB 5
#define JAL_MMU_F_ADD_REPLICA (1u << 0)
/* Peer memory (since 1.8; docs/fabric.md, "Peer memory"). An exporting chip publishes pages
 * of a context in its export table (JAL_EXPORT_TABLE_PA, readable by peers over the fabric);
 * an importing chip maps them as remote pages, which name the peer chip, its physical page
 * and the export's slot and key. Every access to a remote page first reads the slot's key
 * from the peer: a revoked export (key changed) fails PERMISSION. */
#define JAL_MMU_CHIP JAL_MGMT_REG(JAL_MGMT_MMU, 0x20)   /* peer chip (domain-wide id) */
#define JAL_MMU_SLOT JAL_MGMT_REG(JAL_MGMT_MMU, 0x24)   /* export slot, 0..JAL_MAX_EXPORTS-1 */
#define JAL_MMU_KEY_LO JAL_MGMT_REG(JAL_MGMT_MMU, 0x28) /* RW; EXPORT writes the new key here */
#define JAL_MMU_KEY_HI JAL_MGMT_REG(JAL_MGMT_MMU, 0x2c)
/* Publish FLAGS pages of CTX from VA (mapped, not replicated) in slot SLOT with a fresh
 * random key (in KEY) and this chip's domain id (in CHIP; ~0 outside a fabric domain). */
#define JAL_MMU_CMD_EXPORT 6
#define JAL_MMU_CMD_REVOKE 7 /* clear slot SLOT: its importers' next access fails */
/* Map VA of CTX to page FLAGS of export SLOT of chip CHIP, checked against KEY (the peer's
 * table is read over the fabric): PERMISSION for a wrong key or page, LINK_DOWN when the
 * peer cannot be reached, INVALID_FIELD for this chip or no fabric. */
#define JAL_MMU_CMD_MAP_REMOTE 8

/* ---- CP: the command processor's user-queue engines, one per queue id. Select with
 * QSEL, describe the queue, then CTRL ENABLE; the engine then follows the queue's
 * doorbell on its own. ---- */
#define JAL_MGMT_CP 0x7000u
#define JAL_CP_QSEL JAL_MGMT_REG(JAL_MGMT_CP, 0x00)
#define JAL_CP_Q_CTX JAL_MGMT_REG(JAL_MGMT_CP, 0x04)
#define JAL_CP_Q_FUNC JAL_MGMT_REG(JAL_MGMT_CP, 0x08) /* host function owning the rings */
#define JAL_CP_Q_RING_LO JAL_MGMT_REG(JAL_MGMT_CP, 0x0c)
#define JAL_CP_Q_RING_HI JAL_MGMT_REG(JAL_MGMT_CP, 0x10)
#define JAL_CP_Q_SIZE JAL_MGMT_REG(JAL_MGMT_CP, 0x14)    /* packets, power of two */
#define JAL_CP_Q_RPTR_LO JAL_MGMT_REG(JAL_MGMT_CP, 0x18) /* bus address of the read index */
#define JAL_CP_Q_RPTR_HI JAL_MGMT_REG(JAL_MGMT_CP, 0x1c)
#define JAL_CP_Q_VECTOR JAL_MGMT_REG(JAL_MGMT_CP, 0x20)
#define JAL_CP_Q_CTRL JAL_MGMT_REG(JAL_MGMT_CP, 0x24)       /* W JAL_CP_CTRL_* */
#define JAL_CP_Q_STATE JAL_MGMT_REG(JAL_MGMT_CP, 0x28)      /* RO enum jal_queue_state */
#define JAL_CP_Q_LAST_ERROR JAL_MGMT_REG(JAL_MGMT_CP, 0x2c) /* RO */
#define JAL_CP_Q_ERRORS JAL_MGMT_REG(JAL_MGMT_CP, 0x30)     /* RO */
#define JAL_CP_Q_READ_LO JAL_MGMT_REG(JAL_MGMT_CP, 0x34)    /* RO read index; LO latches HI */
#define JAL_CP_Q_READ_HI JAL_MGMT_REG(JAL_MGMT_CP, 0x38)
#define JAL_CP_Q_WRITE_LO JAL_MGMT_REG(JAL_MGMT_CP, 0x3c) /* RO last doorbell; LO latches HI */
#define JAL_CP_Q_WRITE_HI JAL_MGMT_REG(JAL_MGMT_CP, 0x40)
#define JAL_CP_Q_ERR_INDEX_LO JAL_MGMT_REG(JAL_MGMT_CP, 0x44) /* RO; LO latches HI */
#define JAL_CP_Q_ERR_INDEX_HI JAL_MGMT_REG(JAL_MGMT_CP, 0x48)
/* Since 1.11: the host space of the queue's context (0: none, the whole function). */
#define JAL_CP_Q_SPACE JAL_MGMT_REG(JAL_MGMT_CP, 0x4c)
/* Host windows (since 1.11; admin.h, jal_window_op): write FUNC, SPACE, BASE and SIZE, then
 * CMD (a jal_window_op, or JAL_CP_WIN_CLEAR_FUNC: every window of FUNC); STATUS reads the
 * last command's jal_status. */
#define JAL_CP_WIN_FUNC JAL_MGMT_REG(JAL_MGMT_CP, 0x50)
#define JAL_CP_WIN_SPACE JAL_MGMT_REG(JAL_MGMT_CP, 0x54)
#define JAL_CP_WIN_BASE_LO JAL_MGMT_REG(JAL_MGMT_CP, 0x58)
#define JAL_CP_WIN_BASE_HI JAL_MGMT_REG(JAL_MGMT_CP, 0x5c)
#define JAL_CP_WIN_SIZE_LO JAL_MGMT_REG(JAL_MGMT_CP, 0x60)
#define JAL_CP_WIN_SIZE_HI JAL_MGMT_REG(JAL_MGMT_CP, 0x64)
#define JAL_CP_WIN_CMD JAL_MGMT_REG(JAL_MGMT_CP, 0x68)    /* W */
#define JAL_CP_WIN_STATUS JAL_MGMT_REG(JAL_MGMT_CP, 0x6c) /* RO */
#define JAL_CP_WIN_CLEAR_FUNC 4
#define JAL_CP_CTRL_ENABLE 1
#define JAL_CP_CTRL_DISABLE 2 /* stops after the packet in progress; waits for it */
#define JAL_CP_CTRL_RESET 3   /* disable, drop unexecuted packets, clear errors, re-enable */

/* ---- LINK: the chip's fabric ports, 12 scale-up (0-11) then 4 scale-out (12-15), each 4
 * lanes of 100 Gb/s (docs/fabric.md). Select a port, read how it is wired and its state,
 * TRAIN it (it comes up at the width its lanes allow if it is cabled to another chip that
 * is there; the command costs JAL_LINK_TRAIN_US) or take it DOWN. Every port is down at
 * power-on and after a chip reset. Counters run since power-on (since 1.7). ---- */
#define JAL_MGMT_LINK 0x9000u
#define JAL_LINK_SEL JAL_MGMT_REG(JAL_MGMT_LINK, 0x00)    /* RW port */
#define JAL_LINK_STATUS JAL_MGMT_REG(JAL_MGMT_LINK, 0x04) /* RO JAL_LINK_ST_* | lanes << 8 */
/* RO while CONNECTED: the far end's chip id (bits 0-15) and port (bits 16-23) */
#define JAL_LINK_PEER JAL_MGMT_REG(JAL_MGMT_LINK, 0x08)
#define JAL_LINK_CMD JAL_MGMT_REG(JAL_MGMT_LINK, 0x0c)         /* W JAL_LINK_CMD_* */
#define JAL_LINK_TX_BYTES_LO JAL_MGMT_REG(JAL_MGMT_LINK, 0x10) /* RO; LO latches HI */
#define JAL_LINK_TX_BYTES_HI JAL_MGMT_REG(JAL_MGMT_LINK, 0x14)
#define JAL_LINK_RX_BYTES_LO JAL_MGMT_REG(JAL_MGMT_LINK, 0x18) /* RO; LO latches HI */
#define JAL_LINK_RX_BYTES_HI JAL_MGMT_REG(JAL_MGMT_LINK, 0x1c)
#define JAL_LINK_ERRORS JAL_MGMT_REG(JAL_MGMT_LINK, 0x20) /* RO the selected port's */
/* RO, every port at once: masks of the ports up and connected, all ports' errors */
#define JAL_LINK_UP_MASK JAL_MGMT_REG(JAL_MGMT_LINK, 0x24)
#define JAL_LINK_CONNECTED_MASK JAL_MGMT_REG(JAL_MGMT_LINK, 0x28)
#define JAL_LINK_ERRORS_TOTAL JAL_MGMT_REG(JAL_MGMT_LINK, 0x2c)
#define JAL_LINK_PORTS 16u
#define JAL_LINK_SCALE_UP_PORTS 12u
#define JAL_LINK_LANES 4u
#define JAL_LINK_TRAIN_US 50u           /* modelled cost of a TRAIN */
#define JAL_LINK_ST_CONNECTED (1u << 0) /* cabled to another chip's port */
#define JAL_LINK_ST_UP (1u << 1)
#define JAL_LINK_CMD_TRAIN 1
#define JAL_LINK_CMD_DOWN 2
/* Lane-level training (since 1.8; docs/fabric.md, "Link training"). TRAIN_LANES trains the
 * selected port's lanes against the far end without bringing the port up (it costs
 * JAL_LINK_TRAIN_US): STATUS bit PEER says whether the far end answered, LANES_OK holds the
 * lanes that locked and LANE_MARGIN each lane's eye margin. ENABLE brings the port up on the
 * lanes of LANE_USE (all of them locked at the last training, 4, 2 or 1 of them): anything
 * else leaves it down. TRAIN keeps its 1.7 meaning: train and come up on every lane that
 * locks. */
#define JAL_LINK_LANE_SEL JAL_MGMT_REG(JAL_MGMT_LINK, 0x30)     /* RW lane 0-3 */
#define JAL_LINK_LANE_MARGIN JAL_MGMT_REG(JAL_MGMT_LINK, 0x34)  /* RO milli-UI; 0: no lock */
#define JAL_LINK_LANES_OK JAL_MGMT_REG(JAL_MGMT_LINK, 0x38)     /* RO mask of locked lanes */
#define JAL_LINK_LANE_USE JAL_MGMT_REG(JAL_MGMT_LINK, 0x3c)     /* RW mask ENABLE uses */
#define JAL_LINK_TRANSFERS_LO JAL_MGMT_REG(JAL_MGMT_LINK, 0x40) /* RO; LO latches HI */
#define JAL_LINK_TRANSFERS_HI JAL_MGMT_REG(JAL_MGMT_LINK, 0x44)
/* RO this chip's id in its fabric domain (the id other chips' PEER registers show) */
#define JAL_LINK_SELF JAL_MGMT_REG(JAL_MGMT_LINK, 0x48)
#define JAL_LINK_ST_PEER (1u << 2) /* the far end answered the last training */
/* Cabled to switch plane n of its kind (n: the port's number within its kind) instead of to
 * one peer: PEER reads JAL_LINK_PEER_SWITCH in its chip field and n in its port field,
 * training brings it up (the switch answers) and it reaches every chip of the plane. */
#define JAL_LINK_ST_SWITCHED (1u << 3)
#define JAL_LINK_PEER_SWITCH 0xffffu
#define JAL_LINK_CMD_TRAIN_LANES 3
#define JAL_LINK_CMD_ENABLE 4
/* (chosen) A lane whose eye margin is below this after a retrain is left out of the port. */
#define JAL_LINK_MARGIN_MIN_MUI 150u
#define JAL_LINK_LANE_MBYTES_PER_S 12500u /* each way: 100 Gb/s */
/* ---- RLOG: retained event log (since 1.7). 4 KiB of always-on RAM, kept across chip and
 * watchdog resets and zero at power-on: the firmware copies each event it logs into entry
 * seq % JAL_RLOG_ENTRIES (a struct jal_log_event, admin.h, as 16 words) and then writes
 * JAL_SYS_RETAIN(JAL_RETAIN_LOG_NEXT), so a reset keeps the previous boot's last events
 * (`jalctl log` after a watchdog recovery shows what led to it). ---- */
#define JAL_MGMT_RLOG 0xa000u
#define JAL_RLOG_ENTRIES 64u
#define JAL_RLOG_WORD(entry, word) JAL_MGMT_REG(JAL_MGMT_RLOG, 64u * (entry) + 4u * (word))

/* ---- FAULT: the emulator's debug fault injector (since 1.7). The firmware writes KIND
 * (enum jal_debug_fault) and ARG0-2, then CTRL GO; the models apply the fault at once and
 * STATUS holds the jal_status (INVALID_FIELD for arguments the models refuse). The bring-up
 * console queues requests instead of applying them: each raises JAL_EV_FAULT, REQ_KIND and
 * REQ_ARG0-2 show the oldest (REQ_KIND 0: none) and writing REQ_TAKE drops it, so every
 * fault is injected, and logged, by the firmware. Production parts leave it out. ---- */
#define JAL_MGMT_FAULT 0xb000u
#define JAL_FAULT_KIND JAL_MGMT_REG(JAL_MGMT_FAULT, 0x00)
#define JAL_FAULT_ARG(n) JAL_MGMT_REG(JAL_MGMT_FAULT, 0x04 + 4 * (n))
#define JAL_FAULT_CTRL JAL_MGMT_REG(JAL_MGMT_FAULT, 0x10) /* W JAL_FAULT_GO */
#define JAL_FAULT_STATUS JAL_MGMT_REG(JAL_MGMT_FAULT, 0x14)
#define JAL_FAULT_REQ_KIND JAL_MGMT_REG(JAL_MGMT_FAULT, 0x20)
#define JAL_FAULT_REQ_ARG(n) JAL_MGMT_REG(JAL_MGMT_FAULT, 0x24 + 4 * (n))
#define JAL_FAULT_REQ_TAKE JAL_MGMT_REG(JAL_MGMT_FAULT, 0x30)
#define JAL_FAULT_GO 1u
#define JAL_FAULT_ARGS 3
/* A hung slice holds its dispatch this long (modelled) before the command processor
 * gives up on it with TIMEOUT and resets the slice. (chosen) */
#define JAL_SLICE_HANG_TIMEOUT_US 100000u

/* Operating limits and the V/F curve (chosen; docs/firmware.md). */
#define JAL_CLOCK_MIN_MHZ 600u
#define JAL_CLOCK_MAX_MHZ 2000u
#define JAL_CLOCK_STEP_MHZ 25u
#define JAL_VOLTAGE_MIN_MV 650u
#define JAL_VOLTAGE_MAX_MV 900u
#define JAL_POWER_TDP_MW 700000u
#define JAL_POWER_LIMIT_MIN_MW 150000u
#define JAL_POWER_LIMIT_MAX_MW 700000u
#define JAL_TEMP_LIMIT_MC 90000
#define JAL_TEMP_CRITICAL_MC 110000 /* (chosen) thermal trip: compute powered off until reset */
#define JAL_CORE_CURRENT_LIMIT_MA 800000u

/* Lowest core voltage at which the compute clock meets timing. */
static inline uint32_t jal_vf_min_mv(uint32_t mhz)
{
    if (mhz <= JAL_CLOCK_MIN_MHZ) return JAL_VOLTAGE_MIN_MV;
    return JAL_VOLTAGE_MIN_MV + (uint32_t)(((uint64_t)(mhz - JAL_CLOCK_MIN_MHZ) *
                                                (JAL_VOLTAGE_MAX_MV - JAL_VOLTAGE_MIN_MV) +
                                            (JAL_CLOCK_MAX_MHZ - JAL_CLOCK_MIN_MHZ) - 1) /
                                           (JAL_CLOCK_MAX_MHZ - JAL_CLOCK_MIN_MHZ));
}

#endif
