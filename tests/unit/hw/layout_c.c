/* Compiled as C11: every device-interface header must be valid C with the same layout. */
#include "jal/emu/protocol.h"
#include "jal/hw/admin.h"
#include "jal/hw/chip.h"
#include "jal/hw/events.h"
#include "jal/hw/isa.h"
#include "jal/hw/mgmt.h"
#include "jal/hw/pci.h"
#include "jal/hw/queue.h"
#include "jal/hw/regs.h"
#include "jal/hw/status.h"
#include "jal/hw/telemetry.h"
#include "jal/hw/version.h"

size_t jal_c_sizeof_identify(void)
{
    return sizeof(struct jal_identify);
}
size_t jal_c_sizeof_telemetry(void)
{
    return sizeof(struct jal_telemetry);
}
size_t jal_c_sizeof_hbm_channel_report(void)
{
    return sizeof(struct jal_hbm_channel_report);
}
size_t jal_c_offsetof_cqe_flags(void)
{
    return offsetof(struct jal_admin_cqe, flags);
}
