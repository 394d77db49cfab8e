// Layouts are fixed by static_asserts in the headers; these tests pin the same facts from
// the C side and check the helper functions the headers define.
#include "jal/emu/protocol.h"
#include "jal/hw/admin.h"
#include "jal/hw/chip.h"
#include "jal/hw/isa.h"
#include "jal/hw/mgmt.h"
#include "jal/hw/pci.h"
#include "jal/hw/queue.h"
#include "jal/hw/regs.h"
#include "jal/hw/status.h"
#include "jal/hw/telemetry.h"
#include "jal/hw/version.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <type_traits>

extern "C" {
size_t jal_c_sizeof_identify(void);
size_t jal_c_sizeof_telemetry(void);
size_t jal_c_sizeof_hbm_channel_report(void);
size_t jal_c_offsetof_cqe_flags(void);
}

TEST(HwLayout, CAndCxxAgree)
{
    EXPECT_EQ(jal_c_sizeof_identify(), sizeof(jal_identify));
    EXPECT_EQ(jal_c_sizeof_telemetry(), sizeof(jal_telemetry));
    EXPECT_EQ(jal_c_sizeof_hbm_channel_report(), sizeof(jal_hbm_channel_report));
    EXPECT_EQ(jal_c_offsetof_cqe_flags(), offsetof(jal_admin_cqe, flags));
}

TEST(HwLayout, QueueEntriesAreNvmeSized)
{
    EXPECT_EQ(sizeof(jal_admin_sqe), 64u);
    EXPECT_EQ(sizeof(jal_admin_cqe), 16u);
    // The phase flag is in the last 8 bytes, which the device writes last.
    EXPECT_GE(offsetof(jal_admin_cqe, flags), sizeof(jal_admin_cqe) - 8);
}

TEST(HwLayout, StructsHaveNoImplicitPadding)
{
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_admin_sqe>);
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_admin_cqe>);
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_identify>);
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_telemetry>);
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_slice_map>);
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_hbm_channel_report>);
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_hbm_report_header>);
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_log_page>);
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_log_event>);
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_post_entry>);
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_msg_hdr>);
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_msg_hello>);
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_msg_reg>);
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_msg_mem_map>);
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_msg_set_irq>);
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_msg_reply>);
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_msg_hello_reply>);
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_mem_alloc_reply>);
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_placement_header>);
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_page_placement>);
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_queue_status>);
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_packet_nop>);
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_packet_copy>);
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_packet_barrier_and>);
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_packet_signal>);
    EXPECT_TRUE(std::has_unique_object_representations_v<jal_signal>);
}

TEST(HwQueue, PacketsShareHeaderAndSignalPlacement)
{
    // The header is the first word (stored last by the producer) and the completion
    // signal the last 8 bytes (so the device can read it without knowing the type).
    EXPECT_EQ(offsetof(jal_packet_copy, header), 0u);
    EXPECT_EQ(offsetof(jal_packet_barrier_and, completion_signal),
              size_t{JAL_PACKET_SIGNAL_OFFSET});
    EXPECT_EQ(offsetof(jal_packet_signal, completion_signal), size_t{JAL_PACKET_SIGNAL_OFFSET});
    EXPECT_EQ(sizeof(jal_packet_nop), size_t{JAL_PACKET_SIZE});
    // The signal's value is in its last 8 bytes, which device DMA writes last.
    EXPECT_EQ(offsetof(jal_signal, value), sizeof(jal_signal) - 8);
    EXPECT_EQ(JAL_QUEUE_SIZE_MIN & (JAL_QUEUE_SIZE_MIN - 1), 0u);
}

TEST(HwLayout, ProtocolMessagesFitTheMaximum)
{
    EXPECT_LE(sizeof(jal_msg_hello), size_t{JAL_PROTO_MSG_MAX});
    EXPECT_LE(sizeof(jal_msg_reply) + sizeof(jal_msg_hello_reply), size_t{JAL_PROTO_MSG_MAX});
}

TEST(HwChip, GeometryMatchesThePublishedChip)
{
    EXPECT_EQ(JAL_HBM_CHANNELS, 192);
    EXPECT_EQ(JAL_HBM_CHANNELS_PER_SLICE, 3);
    EXPECT_EQ(JAL_HBM_TOTAL_BYTES, 216ull << 30);
    EXPECT_EQ(JAL_HBM_SLICE_BYTES * JAL_NUM_SLICES, JAL_HBM_TOTAL_BYTES);
    EXPECT_EQ(jal_hbm_channel_of(jal_hbm_channel_base(191)), 191u);
    EXPECT_EQ(jal_hbm_channel_of(jal_hbm_channel_base(5) + JAL_HBM_CHANNEL_BYTES - 1), 5u);
    EXPECT_EQ(jal_slice_of_channel(191), 63u);
    EXPECT_EQ(jal_hbm_stack_of_channel(32), 1u);
}

TEST(HwChip, VoltageFrequencyCurveIsMonotoneAndBounded)
{
    EXPECT_EQ(jal_vf_min_mv(JAL_CLOCK_MIN_MHZ), JAL_VOLTAGE_MIN_MV);
    EXPECT_EQ(jal_vf_min_mv(JAL_CLOCK_MAX_MHZ), JAL_VOLTAGE_MAX_MV);
    for (uint32_t f = JAL_CLOCK_MIN_MHZ; f < JAL_CLOCK_MAX_MHZ; f += JAL_CLOCK_STEP_MHZ)
        EXPECT_LE(jal_vf_min_mv(f), jal_vf_min_mv(f + JAL_CLOCK_STEP_MHZ)) << f;
}

TEST(HwStatus, EveryCodeHasADistinctName)
{
    std::set<std::string> names;
    for (uint32_t s = 0; s < JAL_STATUS_COUNT_; ++s) {
        const std::string n = jal_status_name(s);
        EXPECT_NE(n, "unknown status") << s;
        EXPECT_TRUE(names.insert(n).second) << "duplicate name " << n;
    }
    EXPECT_STREQ(jal_status_name(JAL_STATUS_COUNT_), "unknown status");
    EXPECT_STREQ(jal_limiter_name(JAL_LIMITER_NONE), "none");
    EXPECT_STREQ(jal_limiter_name(JAL_LIMITER_THERMAL), "thermal");
}

TEST(HwAdmin, EveryOpcodeHasADistinctNameAndOthersNone)
{
    // The host library's messages and the emulator's traces both name commands by this.
    std::set<std::string> names;
    for (unsigned op = 0; op < 256; ++op) {
        const char* n = jal_admin_opcode_name(static_cast<uint8_t>(op));
        if (n) {
            EXPECT_TRUE(names.insert(n).second) << "duplicate name " << n;
        }
    }
    EXPECT_EQ(names.size(), 26u);
    EXPECT_STREQ(jal_admin_opcode_name(JAL_ADMIN_IDENTIFY), "IDENTIFY");
    EXPECT_STREQ(jal_admin_opcode_name(JAL_ADMIN_IMPORT_PEER), "IMPORT_PEER");
    EXPECT_STREQ(jal_admin_opcode_name(JAL_ADMIN_HOST_WINDOW), "HOST_WINDOW");
    EXPECT_STREQ(jal_admin_opcode_name(JAL_ADMIN_DEBUG_FAULT), "DEBUG_FAULT");
    EXPECT_EQ(jal_admin_opcode_name(0x00), nullptr);
    EXPECT_EQ(jal_admin_opcode_name(0x42), nullptr);
}

TEST(HwVersion, PacksMajorAndMinor)
{
    EXPECT_EQ(JAL_HW_VERSION_GET_MAJOR(JAL_HW_VERSION), unsigned{JAL_HW_VERSION_MAJOR});
    EXPECT_EQ(JAL_HW_VERSION_GET_MINOR(JAL_HW_VERSION), unsigned{JAL_HW_VERSION_MINOR});
}

TEST(HwIsa, InstructionFieldsRoundTrip)
{
    const uint64_t w = JAL_INSN(JAL_OP_TDESC, 15, 31, 7, JAL_DT_MXFP4, -8);
    EXPECT_EQ(JAL_INSN_OPCODE(w), JAL_OP_TDESC);
    EXPECT_EQ(JAL_INSN_A(w), 15);
    EXPECT_EQ(JAL_INSN_B(w), 31);
    EXPECT_EQ(JAL_INSN_C(w), 7);
    EXPECT_EQ(JAL_INSN_D(w), JAL_DT_MXFP4);
    EXPECT_EQ(JAL_INSN_IMM(w), -8);
    // Out-of-range register numbers cannot spill into neighbouring fields.
    EXPECT_EQ(JAL_INSN_OPCODE(JAL_INSN(JAL_OP_ADD, 0xff, 0, 0, 0, 0)), JAL_OP_ADD);
}

TEST(HwIsa, MxBlocksMatchGgml)
{
    // ggml: block_mxfp4 {uint8 e; uint8 qs[QK_MXFP4/2]}, block_q8_0 {ggml_half d; int8 qs[32]}.
    EXPECT_EQ(sizeof(jal_block_mxfp4), 1u + JAL_MX_BLOCK / 2);
    EXPECT_EQ(sizeof(jal_block_q8_0), 2u + 32);
    EXPECT_EQ(sizeof(jal_code_object_header), 64u);
    EXPECT_EQ(sizeof(jal_packet_dispatch), size_t{JAL_PACKET_SIZE});
    EXPECT_EQ(offsetof(jal_packet_dispatch, completion_signal), size_t{JAL_PACKET_SIGNAL_OFFSET});
}
