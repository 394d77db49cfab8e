/* Event log vocabulary: the codes of jal_log_event.code, what each of its four arguments
 * means, and the names of the boot table's POST codes. The firmware logs with these codes;
 * hosts (jalctl log, the emulator's log) decode the arguments with the same table, so an
 * event reads "hbm channel failed channel=100 dead_lanes=5 reason=too_many_dead_lanes"
 * everywhere. Codes are extend-only: hosts may match on them. */
#ifndef JAL_HW_EVENTS_H
#define JAL_HW_EVENTS_H

#include "admin.h"
#include "compat.h"
#include "mgmt.h"
#include "status.h"
#include "telemetry.h"

enum jal_event_code {
    /* JAL_SRC_BOOT */
    JAL_EVENT_BOOT_START = 0x0100,
    JAL_EVENT_BOOT_STEP = 0x0101,
    JAL_EVENT_BOOT_STEP_FAILED = 0x0102,
    JAL_EVENT_BOOT_DONE = 0x0103,
    JAL_EVENT_LINKS_TRAINED = 0x0104, /* since 1.7 */
    /* JAL_SRC_SLICE */
    JAL_EVENT_SLICE_HARVEST = 0x0200,
    JAL_EVENT_SLICE_TOO_FEW = 0x0201,
    JAL_EVENT_SLICE_NO_MEMORY = 0x0202,
    /* JAL_SRC_HBM */
    JAL_EVENT_HBM_CHANNEL_FAILED = 0x0300,
    JAL_EVENT_HBM_CHANNEL_REPAIRED = 0x0301,
    JAL_EVENT_HBM_STACK_FAILED = 0x0302,
    JAL_EVENT_HBM_TRAINED = 0x0303,
    /* JAL_SRC_POWER */
    JAL_EVENT_THROTTLE_BEGIN = 0x0400,
    JAL_EVENT_THROTTLE_END = 0x0401,
    JAL_EVENT_EMERGENCY = 0x0402,
    JAL_EVENT_POWER_LIMIT_SET = 0x0403,
    JAL_EVENT_THERMAL_TRIP = 0x0404,
    /* JAL_SRC_ADMIN */
    JAL_EVENT_ADMIN_QUEUE_ENABLED = 0x0500, /* debug: housekeeping, not kept in the ring */
    JAL_EVENT_ADMIN_QUEUE_ERROR = 0x0501,
    JAL_EVENT_ADMIN_COMMAND_ERROR = 0x0502,
    JAL_EVENT_ADMIN_RESET = 0x0503,
    JAL_EVENT_ADMIN_HANG = 0x0504,
    JAL_EVENT_CONTEXT_CREATED = 0x0505,
    JAL_EVENT_CONTEXT_DESTROYED = 0x0506,
    JAL_EVENT_FUNCTION_CLEANUP = 0x0507,
    JAL_EVENT_USER_QUEUE_ERROR = 0x0508,
    JAL_EVENT_MMU_ERROR = 0x0509,
    JAL_EVENT_DEBUG_FAULT = 0x050a,  /* a fault injected (admin DEBUG_FAULT or the console), 1.7 */
    JAL_EVENT_PAGE_RETIRED = 0x050b, /* an uncorrectable ECC error took a page out of service */
    /* JAL_SRC_WATCHDOG */
    JAL_EVENT_WATCHDOG_RECOVERY = 0x0600,
    /* JAL_SRC_LINK (since 1.8): a fabric port's training outcome, logged when it changes */
    JAL_EVENT_LINK_UP = 0x0700,
    JAL_EVENT_LINK_DEGRADED = 0x0701,
    JAL_EVENT_LINK_DOWN = 0x0702,
};

/* Why HBM training dropped a channel (argument `reason` of HBM_CHANNEL_FAILED). */
enum jal_hbm_fail_reason {
    JAL_HBM_FAIL_NONE = 0,
    JAL_HBM_FAIL_TOO_MANY_DEAD_LANES = 1,
    JAL_HBM_FAIL_NO_WRITE_LEVEL = 2,
    JAL_HBM_FAIL_NO_READ_EYE = 3,
    JAL_HBM_FAIL_READ_RECHECK = 4,
    JAL_HBM_FAIL_NO_WRITE_EYE = 5,
    JAL_HBM_FAIL_WRITE_RECHECK = 6,
    JAL_HBM_FAIL_MEMTEST = 7,
    JAL_HBM_FAIL_STACK = 8,
};

/* How an argument reads. Named kinds decode through jal_event_arg_name(); the unit kinds
 * are numbers in the unit jal_event_arg_unit() gives. */
enum jal_event_arg_kind {
    JAL_ARG_NONE = 0, /* unused slot */
    JAL_ARG_DEC,
    JAL_ARG_HEX,
    JAL_ARG_STATUS,      /* enum jal_status */
    JAL_ARG_LIMITER,     /* enum jal_limiter */
    JAL_ARG_RESET_CAUSE, /* JAL_RESET_CAUSE_* */
    JAL_ARG_HBM_REASON,  /* enum jal_hbm_fail_reason */
    JAL_ARG_MMU_CMD,     /* JAL_MMU_CMD_* */
    JAL_ARG_BOOL,
    JAL_ARG_POST_CODE, /* hex, with jal_post_step_name() */
    JAL_ARG_MW,        /* milliwatts */
    JAL_ARG_MC,        /* milli-degrees Celsius (signed) */
    JAL_ARG_MHZ,
    JAL_ARG_MS,
    JAL_ARG_QUEUE_ERROR,  /* last error (jal_status) | queue state << 24 */
    JAL_ARG_FAULT_KIND,   /* enum jal_debug_fault (admin.h) */
    JAL_ARG_FAULT_SOURCE, /* the host function whose admin command it was, or JAL_FAULT_BY_CONSOLE */
    JAL_ARG_LINK_REASON,  /* enum jal_link_down_reason (admin.h) */
    JAL_ARG_MUI,          /* milli-UI (eye margin) */
};

struct jal_event_arg_desc {
    const char* name;
    uint8_t kind; /* enum jal_event_arg_kind */
};

struct jal_event_desc {
    uint16_t code;
    const char* name; /* snake_case, stable: what --json calls the event */
    struct jal_event_arg_desc args[4];
};

#define JAL_EVENT_DESC_COUNT 33

static const struct jal_event_desc jal_event_descs[JAL_EVENT_DESC_COUNT] = {
    {JAL_EVENT_BOOT_START,
     "boot_start",
     {{"reset_cause", JAL_ARG_RESET_CAUSE}, {"boot_count", JAL_ARG_DEC}, {0, 0}, {0, 0}}},
    {JAL_EVENT_BOOT_STEP,
     "boot_step",
     {{"step", JAL_ARG_DEC}, {"post_code", JAL_ARG_POST_CODE}, {"status", JAL_ARG_STATUS}, {0, 0}}},
    {JAL_EVENT_BOOT_STEP_FAILED,
     "boot_step_failed",
     {{"step", JAL_ARG_DEC},
      {"post_code", JAL_ARG_POST_CODE},
      {"status", JAL_ARG_STATUS},
      {"fatal", JAL_ARG_BOOL}}},
    {JAL_EVENT_BOOT_DONE,
     "boot_done",
     {{"status_register", JAL_ARG_HEX},
      {"fault", JAL_ARG_STATUS},
      {"slices", JAL_ARG_DEC},
      {"hbm_channels", JAL_ARG_DEC}}},
    {JAL_EVENT_LINKS_TRAINED,
     "links_trained",
     {{"connected", JAL_ARG_DEC}, {"up", JAL_ARG_DEC}, {"down_ports", JAL_ARG_HEX}, {0, 0}}},
    {JAL_EVENT_SLICE_HARVEST,
     "slice_harvest",
     {{"enabled", JAL_ARG_DEC},
      {"fused", JAL_ARG_DEC},
      {"bist_failed", JAL_ARG_DEC},
      {"bist_timeout", JAL_ARG_DEC}}},
    {JAL_EVENT_SLICE_TOO_FEW,
     "slice_too_few",
     {{"enabled", JAL_ARG_DEC}, {"minimum", JAL_ARG_DEC}, {0, 0}, {0, 0}}},
    {JAL_EVENT_SLICE_NO_MEMORY,
     "slice_no_memory",
     {{"slice", JAL_ARG_DEC}, {0, 0}, {0, 0}, {0, 0}}},
    {JAL_EVENT_HBM_CHANNEL_FAILED,
     "hbm_channel_failed",
     {{"channel", JAL_ARG_DEC},
      {"dead_lanes", JAL_ARG_DEC},
      {"reason", JAL_ARG_HBM_REASON},
      {0, 0}}},
    {JAL_EVENT_HBM_CHANNEL_REPAIRED,
     "hbm_channel_repaired",
     {{"channel", JAL_ARG_DEC}, {"repaired_lanes", JAL_ARG_DEC}, {0, 0}, {0, 0}}},
    {JAL_EVENT_HBM_STACK_FAILED,
     "hbm_stack_failed",
     {{"stack", JAL_ARG_DEC}, {"failed_channels", JAL_ARG_DEC}, {0, 0}, {0, 0}}},
    {JAL_EVENT_HBM_TRAINED,
     "hbm_trained",
     {{"ok", JAL_ARG_DEC},
      {"repaired", JAL_ARG_DEC},
      {"failed", JAL_ARG_DEC},
      {"untrained", JAL_ARG_DEC}}},
    {JAL_EVENT_THROTTLE_BEGIN,
     "throttle_begin",
     {{"limiter", JAL_ARG_LIMITER},
      {"clock", JAL_ARG_MHZ},
      {"power", JAL_ARG_MW},
      {"limit", JAL_ARG_MW}}},
    {JAL_EVENT_THROTTLE_END, "throttle_end", {{"episode", JAL_ARG_MS}, {0, 0}, {0, 0}, {0, 0}}},
    {JAL_EVENT_EMERGENCY,
     "power_emergency",
     {{"power", JAL_ARG_MW}, {"limit", JAL_ARG_MW}, {"unlogged_ticks", JAL_ARG_DEC}, {0, 0}}},
    {JAL_EVENT_POWER_LIMIT_SET,
     "power_limit_set",
     {{"limit", JAL_ARG_MW}, {"persistent", JAL_ARG_BOOL}, {0, 0}, {0, 0}}},
    {JAL_EVENT_THERMAL_TRIP,
     "thermal_trip",
     {{"junction", JAL_ARG_MC}, {"critical", JAL_ARG_MC}, {"power", JAL_ARG_MW}, {0, 0}}},
    {JAL_EVENT_ADMIN_QUEUE_ENABLED,
     "admin_queue_enabled",
     {{"function", JAL_ARG_DEC}, {"sq_size", JAL_ARG_DEC}, {"cq_size", JAL_ARG_DEC}, {0, 0}}},
    {JAL_EVENT_ADMIN_QUEUE_ERROR,
     "admin_queue_error",
     {{"function", JAL_ARG_DEC}, {"status", JAL_ARG_STATUS}, {0, 0}, {0, 0}}},
    {JAL_EVENT_ADMIN_COMMAND_ERROR,
     "admin_command_error",
     {{"function", JAL_ARG_DEC},
      {"opcode", JAL_ARG_HEX},
      {"status", JAL_ARG_STATUS},
      {"cid", JAL_ARG_DEC}}},
    {JAL_EVENT_ADMIN_RESET, "admin_reset", {{0, 0}, {0, 0}, {0, 0}, {0, 0}}},
    {JAL_EVENT_ADMIN_HANG, "admin_hang", {{0, 0}, {0, 0}, {0, 0}, {0, 0}}},
    {JAL_EVENT_CONTEXT_CREATED,
     "context_created",
     {{"function", JAL_ARG_DEC}, {"context", JAL_ARG_DEC}, {"host_space", JAL_ARG_DEC}, {0, 0}}},
    {JAL_EVENT_CONTEXT_DESTROYED,
     "context_destroyed",
     {{"function", JAL_ARG_DEC},
      {"context", JAL_ARG_DEC},
      {"allocations", JAL_ARG_DEC},
      {"queues", JAL_ARG_DEC}}},
    {JAL_EVENT_FUNCTION_CLEANUP,
     "function_cleanup",
     {{"function", JAL_ARG_DEC},
      {"contexts", JAL_ARG_DEC},
      {"allocations", JAL_ARG_DEC},
      {"queues", JAL_ARG_DEC}}},
    {JAL_EVENT_USER_QUEUE_ERROR,
     "user_queue_error",
     {{"queue", JAL_ARG_DEC},
      {"context", JAL_ARG_DEC},
      {"errors", JAL_ARG_DEC},
      {"last_error", JAL_ARG_QUEUE_ERROR}}},
    {JAL_EVENT_MMU_ERROR,
     "mmu_error",
     {{"command", JAL_ARG_MMU_CMD},
      {"status_or_count", JAL_ARG_DEC},
      {"context", JAL_ARG_DEC},
      {"va_page", JAL_ARG_HEX}}},
    {JAL_EVENT_DEBUG_FAULT,
     "debug_fault",
     {{"kind", JAL_ARG_FAULT_KIND},
      {"arg0", JAL_ARG_DEC},
      {"arg1", JAL_ARG_DEC},
      {"by", JAL_ARG_FAULT_SOURCE}}},
    {JAL_EVENT_PAGE_RETIRED,
     "page_retired",
     {{"channel", JAL_ARG_DEC},
      {"page", JAL_ARG_DEC},
      {"in_use", JAL_ARG_BOOL},
      {"retired_total", JAL_ARG_DEC}}},
    {JAL_EVENT_WATCHDOG_RECOVERY,
     "watchdog_recovery",
     {{"boot_count", JAL_ARG_DEC}, {0, 0}, {0, 0}, {0, 0}}},
    {JAL_EVENT_LINK_UP,
     "link_up",
     {{"port", JAL_ARG_DEC},
      {"lanes", JAL_ARG_DEC},
      {"min_margin", JAL_ARG_MUI},
      {"retrains", JAL_ARG_DEC}}},
    {JAL_EVENT_LINK_DEGRADED,
     "link_degraded",
     {{"port", JAL_ARG_DEC},
      {"lanes", JAL_ARG_DEC},
      {"lanes_ok", JAL_ARG_HEX},
      {"reason", JAL_ARG_LINK_REASON}}},
    {JAL_EVENT_LINK_DOWN,
     "link_down",
     {{"port", JAL_ARG_DEC},
      {"reason", JAL_ARG_LINK_REASON},
      {"lanes_ok", JAL_ARG_HEX},
      {"retrains", JAL_ARG_DEC}}},
};

/* The description of an event code, or NULL for a code this header does not know (a newer
 * firmware's). */
static inline const struct jal_event_desc* jal_event_describe(uint32_t code)
{
    uint32_t i;
    for (i = 0; i < JAL_EVENT_DESC_COUNT; i++)
        if (jal_event_descs[i].code == code) return &jal_event_descs[i];
    return 0;
}

static inline const char* jal_reset_cause_name(uint32_t cause)
{
    switch (cause) {
    case JAL_RESET_CAUSE_POWER_ON:
        return "power_on";
    case JAL_RESET_CAUSE_HOST:
        return "host";
    case JAL_RESET_CAUSE_WATCHDOG:
        return "watchdog";
    default:
        return "unknown";
    }
}

static inline const char* jal_hbm_fail_reason_name(uint32_t reason)
{
    switch (reason) {
    case JAL_HBM_FAIL_NONE:
        return "none";
    case JAL_HBM_FAIL_TOO_MANY_DEAD_LANES:
        return "too_many_dead_lanes";
    case JAL_HBM_FAIL_NO_WRITE_LEVEL:
        return "no_write_level";
    case JAL_HBM_FAIL_NO_READ_EYE:
        return "no_read_eye";
    case JAL_HBM_FAIL_READ_RECHECK:
        return "read_recheck";
    case JAL_HBM_FAIL_NO_WRITE_EYE:
        return "no_write_eye";
    case JAL_HBM_FAIL_WRITE_RECHECK:
        return "write_recheck";
    case JAL_HBM_FAIL_MEMTEST:
        return "memtest";
    case JAL_HBM_FAIL_STACK:
        return "stack";
    default:
        return "unknown";
    }
}

static inline const char* jal_link_down_reason_name(uint32_t reason)
{
    switch (reason) {
    case JAL_LINK_DOWN_NONE:
        return "none";
    case JAL_LINK_DOWN_NOT_TRAINED:
        return "not_trained";
    case JAL_LINK_DOWN_NO_PEER:
        return "no_peer";
    case JAL_LINK_DOWN_NO_LANES:
        return "no_lanes";
    case JAL_LINK_DOWN_LOST:
        return "lost";
    case JAL_LINK_DOWN_BAD_LANES:
        return "bad_lanes";
    default:
        return "unknown";
    }
}

static inline const char* jal_debug_fault_name(uint32_t kind)
{
    switch (kind) {
    case JAL_DEBUG_FAULT_HANG_MAIN_LOOP:
        return "hang_main_loop";
    case JAL_DEBUG_FAULT_SLICE_FAIL:
        return "slice_fail";
    case JAL_DEBUG_FAULT_SLICE_HANG:
        return "slice_hang";
    case JAL_DEBUG_FAULT_HBM_LANE:
        return "hbm_lane";
    case JAL_DEBUG_FAULT_ECC_CORRECTED:
        return "ecc_corrected";
    case JAL_DEBUG_FAULT_ECC_UNCORRECTED:
        return "ecc_uncorrected";
    case JAL_DEBUG_FAULT_AMBIENT:
        return "ambient";
    case JAL_DEBUG_FAULT_LOAD:
        return "load";
    case JAL_DEBUG_FAULT_CRASH:
        return "crash";
    case JAL_DEBUG_FAULT_LINK_LANE:
        return "link_lane";
    default:
        return "unknown";
    }
}

/* Who injected a fault (argument `by` of DEBUG_FAULT). */
#define JAL_FAULT_BY_CONSOLE 0xffu /* else the host function whose admin command it was */
static inline const char* jal_fault_source_name(uint32_t by)
{
    return by == JAL_FAULT_BY_CONSOLE ? "console" : 0; /* else the function's number */
}

static inline const char* jal_mmu_cmd_name(uint32_t cmd)
{
    switch (cmd) {
    case JAL_MMU_CMD_MAP:
        return "map";
    case JAL_MMU_CMD_UNMAP:
        return "unmap";
    case JAL_MMU_CMD_LOOKUP:
        return "lookup";
    case JAL_MMU_CMD_FLUSH_CTX:
        return "flush_ctx";
    case JAL_MMU_CMD_SCRUB:
        return "scrub";
    default:
        return "unknown";
    }
}

/* The boot table's steps by POST code (firmware/firmware.cpp keeps them in step). */
static inline const char* jal_post_step_name(uint32_t post_code)
{
    switch (post_code) {
    case 0x10:
        return "hostif init";
    case 0x20:
        return "watchdog arm";
    case 0x30:
        return "power init";
    case 0x40:
        return "slice reset release";
    case 0x50:
        return "slice bist";
    case 0x60:
        return "harvest";
    case 0x70:
        return "hbm training";
    case 0x80:
        return "capacity reconcile";
    case 0x90:
        return "power manager start";
    case 0x98:
        return "link training";
    case 0xa0:
        return "ready";
    default:
        return "unknown";
    }
}

/* The name of a named-kind argument's value; NULL for the numeric kinds. */
static inline const char* jal_event_arg_name(uint32_t kind, uint32_t value)
{
    switch (kind) {
    case JAL_ARG_STATUS:
        return jal_status_name(value);
    case JAL_ARG_LIMITER:
        return jal_limiter_name(value);
    case JAL_ARG_RESET_CAUSE:
        return jal_reset_cause_name(value);
    case JAL_ARG_HBM_REASON:
        return jal_hbm_fail_reason_name(value);
    case JAL_ARG_MMU_CMD:
        return jal_mmu_cmd_name(value);
    case JAL_ARG_BOOL:
        return value ? "yes" : "no";
    case JAL_ARG_POST_CODE:
        return jal_post_step_name(value);
    case JAL_ARG_QUEUE_ERROR:
        return jal_status_name(value & 0xffffffu);
    case JAL_ARG_FAULT_KIND:
        return jal_debug_fault_name(value);
    case JAL_ARG_FAULT_SOURCE:
        return jal_fault_source_name(value);
    case JAL_ARG_LINK_REASON:
        return jal_link_down_reason_name(value);
    default:
        return 0;
    }
}

/* The unit suffix of a numeric argument ("" for plain counts). */
static inline const char* jal_event_arg_unit(uint32_t kind)
{
    switch (kind) {
    case JAL_ARG_MW:
        return "mW";
    case JAL_ARG_MC:
        return "m\xc2\xb0"
               "C";
    case JAL_ARG_MHZ:
        return "MHz";
    case JAL_ARG_MS:
        return "ms";
    case JAL_ARG_MUI:
        return "mUI";
    default:
        return "";
    }
}

#endif
