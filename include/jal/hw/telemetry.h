/* Telemetry table: what firmware samples every 1 ms tick from the power, clock and
 * thermal sensors, returned by JAL_ADMIN_GET_TELEMETRY. Units are in the field names:
 * mw milliwatts, ma milliamps, mv millivolts, mc milli-degrees Celsius, us microseconds
 * of modelled time. */
#ifndef JAL_HW_TELEMETRY_H
#define JAL_HW_TELEMETRY_H

#include "compat.h"

enum jal_rail {
    JAL_RAIL_CORE = 0, /* compute die logic: scales with clock and voltage */
    JAL_RAIL_SRAM = 1, /* L1 and on-die SRAM */
    JAL_RAIL_HBM = 2,  /* HBM stacks and PHYs */
    JAL_RAIL_IO = 3,   /* I/O chiplet, PCIe, links */
    JAL_RAIL_COUNT = 4,
};

/* Which limiter holds the clock below its maximum. */
enum jal_limiter {
    JAL_LIMITER_NONE = 0,
    JAL_LIMITER_FAST_POWER = 1, /* instantaneous package power vs the limit */
    JAL_LIMITER_SLOW_POWER = 2, /* moving-average power vs the sustained limit */
    JAL_LIMITER_CURRENT = 3,    /* core rail current vs its limit */
    JAL_LIMITER_THERMAL = 4,    /* junction temperature vs its limit */
    JAL_LIMITER_EMERGENCY = 5,  /* power far over the limit: clock dropped to minimum */
    JAL_LIMITER_COUNT = 6,
};

static inline const char* jal_limiter_name(uint32_t l)
{
    switch (l) {
    case JAL_LIMITER_NONE:
        return "none";
    case JAL_LIMITER_FAST_POWER:
        return "fast_power";
    case JAL_LIMITER_SLOW_POWER:
        return "slow_power";
    case JAL_LIMITER_CURRENT:
        return "current";
    case JAL_LIMITER_THERMAL:
        return "thermal";
    case JAL_LIMITER_EMERGENCY:
        return "emergency";
    default:
        return "unknown";
    }
}

struct jal_telemetry {
    uint32_t struct_size;
    uint32_t seq;              /* increments at each sample */
    uint64_t timestamp_us;     /* modelled time of the sample */
    uint32_t power_mw;         /* package power, this tick */
    uint32_t power_avg_mw;     /* moving average used by the sustained limiter */
    uint32_t power_limit_mw;   /* limit in force */
    uint32_t current_limit_ma; /* core rail current limit */
    uint32_t rail_current_ma[JAL_RAIL_COUNT];
    uint32_t rail_voltage_mv[JAL_RAIL_COUNT];
    int32_t temp_junction_mc; /* hottest point on the compute die */
    int32_t temp_hbm_mc;      /* hottest HBM stack */
    int32_t temp_ambient_mc;  /* inlet */
    int32_t temp_limit_mc;
    uint32_t clock_mhz;        /* compute clock in force */
    uint32_t clock_target_mhz; /* what the limiters allow */
    uint32_t clock_max_mhz;
    uint32_t voltage_mv;                              /* core voltage in force */
    uint32_t limiter;                                 /* enum jal_limiter */
    uint32_t slices_powered;                          /* slices not power-gated */
    uint32_t limiter_residency_ms[JAL_LIMITER_COUNT]; /* time each limiter held the clock */
    uint32_t reserved0[2];
    uint64_t energy_uj;       /* package energy since power-on */
    uint64_t uptime_us;       /* since the last boot */
    uint32_t throttle_events; /* entries into a limited state */
    uint32_t emergency_events;
    uint32_t admin_commands;  /* admin commands completed since boot */
    uint32_t watchdog_resets; /* management-core resets by the watchdog since power-on */
    uint32_t ecc_corrected;   /* HBM, chip-wide since power-on (per channel: GET_HBM_REPORT) */
    uint32_t ecc_uncorrected;
    /* Since 1.6. */
    uint32_t utilisation_pm;       /* compute activity over the last tick, per mille */
    uint32_t slices_busy;          /* slices running work at the sample */
    uint32_t clock_min_mhz;        /* the lowest clock the limiters go to */
    uint32_t retired_pages;        /* HBM pages taken out of service since boot */
    uint32_t power_limit_saved_mw; /* persistent limit applied at boot, 0: none (TDP) */
    /* Since 1.7: the fabric ports (JAL_MGMT_LINK). */
    uint32_t links_connected; /* ports cabled to another chip */
    uint32_t links_up;        /* of those, trained and up */
    uint32_t link_errors;     /* all ports, since power-on */
    /* Since 1.8: lane-level training (GET_LINK_REPORT has the per-port detail). */
    uint32_t links_degraded; /* of the ports up, those on fewer lanes than they have */
    uint32_t link_retrains;  /* retrains of all ports since boot */
    uint32_t reserved[10];
};
JAL_ASSERT_SIZE(struct jal_telemetry, 256);
JAL_ASSERT_OFFSET(struct jal_telemetry, timestamp_us, 8);
JAL_ASSERT_OFFSET(struct jal_telemetry, rail_current_ma, 32);
JAL_ASSERT_OFFSET(struct jal_telemetry, temp_junction_mc, 64);
JAL_ASSERT_OFFSET(struct jal_telemetry, clock_mhz, 80);
JAL_ASSERT_OFFSET(struct jal_telemetry, limiter_residency_ms, 104);
JAL_ASSERT_OFFSET(struct jal_telemetry, energy_uj, 136);
JAL_ASSERT_OFFSET(struct jal_telemetry, utilisation_pm, 176);
JAL_ASSERT_OFFSET(struct jal_telemetry, links_connected, 196);
JAL_ASSERT_OFFSET(struct jal_telemetry, link_retrains, 212);

#endif
