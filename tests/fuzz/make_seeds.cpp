// make-fuzz-seeds DIR: writes the seed corpora of the fuzz targets, DIR/<target>/<name>,
// a few valid inputs each, made with the project's own writers (GgufWriter, the synthetic
// GPT-OSS writer, encode_code_object) and the input formats the targets document. The
// committed corpora (tests/fuzz/corpus) are its output: scripts/fuzz.sh --seeds rewrites
// them.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <jal/isa/code_object.hpp>
#include <jal/model/gguf.hpp>
#include <jal/model/synthetic_deepseek.hpp>
#include <jal/model/synthetic_gpt_oss.hpp>

#include "fwimage/image.hpp"
#include "jal/emu/protocol.h"
#include "jal/hw/admin.h"
#include "jal/hw/isa.h"
#include "jal/hw/pci.h"
#include "jal/hw/regs.h"
#include "tile_program.hpp"
#include "tokenizer_vocab.hpp"

namespace fs = std::filesystem;

namespace {

using Bytes = std::vector<uint8_t>;

fs::path g_root;

void put(const std::string& target, const std::string& name, const void* data, size_t n)
{
    const fs::path dir = g_root / target;
    fs::create_directories(dir);
    std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
    if (!out) throw std::runtime_error("cannot write " + (dir / name).string());
}
void put(const std::string& target, const std::string& name, const Bytes& b)
{
    put(target, name, b.data(), b.size());
}
void put(const std::string& target, const std::string& name, const std::string& s)
{
    put(target, name, s.data(), s.size());
}

std::string written(jal::model::GgufWriter& w)
{
    std::ostringstream out;
    w.begin(out);
    while (!w.next_tensor().empty())
        w.write_tensor(std::vector<std::byte>(w.next_tensor_bytes(), std::byte{0x11}));
    w.finish();
    return out.str();
}

void gguf_seeds()
{
    {
        jal::model::GgufWriter w;
        w.set_string("general.name", "empty");
        put("gguf", "minimal.gguf", written(w));
    }
    {  // every pair type, string arrays, a few tensor types, a non-default alignment
        jal::model::GgufWriter w(64);
        w.set_string("general.name", "rich");
        w.set_u8("u8", 1);
        w.set_i16("i16", -2);
        w.set_u64("u64", 3);
        w.set_f64("f64", 4.5);
        w.set_bool("bool", true);
        const std::vector<std::string> tokens = {"<s>", "hello", "", "world"};
        w.set_string_array("tokens", tokens);
        const int32_t ints[] = {1, -2, 3};
        w.set_array_i32("ints", ints);
        const float floats[] = {0.5f, 1.5f};
        w.set_array_f32("floats", floats);
        const uint64_t a[] = {64, 2}, b[] = {32, 2, 2}, c[] = {5};
        w.add_tensor("q", jal::model::TensorType::Q8_0, a);
        w.add_tensor("m", jal::model::TensorType::MXFP4, b);
        w.add_tensor("h", jal::model::TensorType::F16, c);
        put("gguf", "every-type.gguf", written(w));
    }
    const jal::model::GgufFile vocab = jal::fuzz::tokenizer_vocab_gguf();
    put("gguf", "vocabulary.gguf", vocab.bytes().data(), vocab.bytes().size());

    jal::model::SyntheticGptOssOptions o;  // the smallest GPT-OSS shape
    o.n_layer = 1, o.n_embd = 32, o.n_head = 2, o.n_head_kv = 1, o.head_dim = 16;
    o.n_expert = 2, o.n_expert_used = 1, o.n_ff_exp = 32, o.n_vocab = 8, o.sliding_window = 4;
    fs::create_directories(g_root / "gguf");
    jal::model::write_synthetic_gpt_oss((g_root / "gguf" / "gpt-oss-micro.gguf").string(), o);

    jal::model::SyntheticDeepseekOptions d;  // the smallest DeepSeek-V3 shape
    d.n_layer = 2, d.n_embd = 32, d.n_head = 2, d.q_lora_rank = 16, d.kv_lora_rank = 16;
    d.head_dim_nope = 8, d.n_rot = 8, d.head_dim_v = 8, d.n_layer_dense_lead = 1, d.n_ff = 48;
    d.n_expert = 4, d.n_expert_used = 2, d.n_expert_groups = 2, d.n_group_used = 1;
    d.n_ff_exp = 32, d.n_vocab = 8;
    jal::model::write_synthetic_deepseek((g_root / "gguf" / "deepseek-micro.gguf").string(), d);
}

jal_code_arg arg(const char* name, uint32_t offset, uint32_t kind)
{
    jal_code_arg a{};
    std::strncpy(a.name, name, sizeof a.name - 1);
    a.offset = offset;
    a.kind = kind;
    return a;
}

// The first byte is fuzz-code-object's flags (1: fix the CRC).
void code_object_seed(const std::string& name, const std::vector<uint64_t>& code,
                      const std::vector<jal_code_arg>& args, uint32_t args_size)
{
    Bytes b = {1};
    const Bytes object = jal::isa::encode_code_object(name, code, args_size, 4096, args);
    b.insert(b.end(), object.begin(), object.end());
    put("code-object", name, b);
    put("tile-exec", name, jal::fuzz::tile_program_input(2, 2048, code));
}

#define I JAL_INSN
void code_seeds()
{
    // A loop with a forward and a backward branch, two arguments.
    code_object_seed("count-up",
                     {I(JAL_OP_MOVSR, 1, 0, 0, 0, JAL_SR_ARGS), I(JAL_OP_LD, 2, 1, 0, 0, 0),
                      I(JAL_OP_LD, 3, 1, 0, 0, 8), I(JAL_OP_LI, 4, 0, 0, 0, 0),
                      I(JAL_OP_BGE, 4, 2, 0, 0, 4), I(JAL_OP_ST, 4, 3, 0, 0, 0),
                      I(JAL_OP_ADDI, 4, 4, 0, 0, 1), I(JAL_OP_JMP, 0, 0, 0, 0, -3),
                      I(JAL_OP_END, 0, 0, 0, 0, 0)},
                     {arg("n", 0, JAL_ARG_U64), arg("out", 8, JAL_ARG_ADDRESS)}, 16);
    // A tile through L1 and the vector engine (x1..x8 as fuzz-tile-exec's prologue sets them).
    code_object_seed("tile-roundtrip",
                     {I(JAL_OP_TDESC, 0, 5, 3, 4, JAL_TDESC_IMM(0, JAL_DT_F32)),
                      I(JAL_OP_TDESC, 1, 6, 3, 4, JAL_TDESC_IMM(0, JAL_DT_F32)),
                      I(JAL_OP_TLOAD, 0, 2, 0, 0, 0), I(JAL_OP_WAIT, 0, 0, 0, 0, 1),
                      I(JAL_OP_VEXP, 1, 0, 0, 0, 0), I(JAL_OP_VREDSUM, 2, 1, 0, 0, 0),
                      I(JAL_OP_TREAD, 28, 1, 0, 0, 3), I(JAL_OP_TSTORE, 1, 2, 0, 0, 1),
                      I(JAL_OP_WAIT, 1, 0, 0, 0, 1), I(JAL_OP_END, 0, 0, 0, 0, 0)},
                     {arg("in", 0, JAL_ARG_ADDRESS)}, 8);
    // Every slice sends a tile to the next and meets the others at a barrier.
    code_object_seed("ring-exchange",
                     {I(JAL_OP_MOVSR, 9, 0, 0, 0, JAL_SR_SLICE),
                      I(JAL_OP_MOVSR, 10, 0, 0, 0, JAL_SR_NSLICES), I(JAL_OP_ADDI, 11, 9, 0, 0, 1),
                      I(JAL_OP_REMU, 11, 11, 10, 0, 0), I(JAL_OP_ADD, 12, 9, 10, 0, 0),
                      I(JAL_OP_ADDI, 12, 12, 0, 0, -1), I(JAL_OP_REMU, 12, 12, 10, 0, 0),
                      I(JAL_OP_TDESC, 0, 5, 3, 4, JAL_TDESC_IMM(0, JAL_DT_F32)),
                      I(JAL_OP_VFILL, 0, 0, 0, 0, 0x3f800000), I(JAL_OP_SEND, 0, 11, 0, 0, 0),
                      I(JAL_OP_RECV, 0, 12, 0, 0, 1), I(JAL_OP_BARRIER, 0, 0, 0, 0, 0),
                      I(JAL_OP_END, 0, 0, 0, 0, 0)},
                     {}, 0);
    // Every slice's tile to every slice, gathered side by side (ISA 1.6 SENDALL, RECVALL).
    code_object_seed("all-gather",
                     {I(JAL_OP_MOVSR, 10, 0, 0, 0, JAL_SR_NSLICES),
                      I(JAL_OP_TDESC, 0, 5, 3, 3, JAL_TDESC_IMM(0, JAL_DT_F32)),
                      I(JAL_OP_MUL, 11, 3, 10, 0, 0),
                      I(JAL_OP_TDESC, 1, 6, 3, 11, JAL_TDESC_IMM(0, JAL_DT_F32)),
                      I(JAL_OP_VFILL, 0, 0, 0, 0, 0x3f800000), I(JAL_OP_SENDALL, 0, 0, 0, 0, 0),
                      I(JAL_OP_RECVALL, 1, 0, 0, 0, 1), I(JAL_OP_WAIT, 1, 0, 0, 0, 1),
                      I(JAL_OP_END, 0, 0, 0, 0, 0)},
                     {}, 0);
    // Slice 0's tile to every slice, taken by a RECVALL over a mask of dispatch slices (ISA
    // 1.7): x12 = 1, the mask of slice 0.
    code_object_seed("gather-from-mask",
                     {I(JAL_OP_MOVSR, 2, 0, 0, 0, JAL_SR_SLICE),
                      I(JAL_OP_TDESC, 0, 5, 3, 3, JAL_TDESC_IMM(0, JAL_DT_F32)),
                      I(JAL_OP_TDESC, 1, 6, 3, 3, JAL_TDESC_IMM(0, JAL_DT_F32)),
                      I(JAL_OP_VFILL, 0, 0, 0, 0, 0x3f800000), I(JAL_OP_LI, 12, 0, 0, 0, 1),
                      I(JAL_OP_LI, 13, 0, 0, 0, static_cast<int32_t>(JAL_PEER_DISPATCH)),
                      I(JAL_OP_BNE, 2, 0, 0, 0, 2), I(JAL_OP_SENDALL, 0, 13, 0, 0, 0),
                      I(JAL_OP_RECVALL, 1, 12, 0, 0, 1 | JAL_GROUP_MASK),
                      I(JAL_OP_WAIT, 1, 0, 0, 0, 1), I(JAL_OP_END, 0, 0, 0, 0, 0)},
                     {}, 0);
    // A matrix multiply, then a load from an unmapped page (PAGE_FAULT).
    code_object_seed("mma-then-fault",
                     {I(JAL_OP_TDESC, 0, 5, 3, 4, JAL_TDESC_IMM(0, JAL_DT_F32)),
                      I(JAL_OP_TDESC, 1, 6, 3, 4, JAL_TDESC_IMM(0, JAL_DT_BF16)),
                      I(JAL_OP_TDESC, 2, 8, 3, 3, JAL_TDESC_IMM(0, JAL_DT_F32)),
                      I(JAL_OP_MMA, 2, 1, 1, 0, 0), I(JAL_OP_LUI, 13, 0, 0, 0, 0x7fff),
                      I(JAL_OP_LD, 29, 13, 0, 0, 0), I(JAL_OP_END, 0, 0, 0, 0, 0)},
                     {}, 0);
}
#undef I

// fuzz-admin's commands: function, fix-ups, the entry.
struct AdminSeq {
    Bytes bytes;
    AdminSeq& cmd(uint8_t opcode, std::initializer_list<uint32_t> cdw, uint32_t len = 0,
                  uint8_t fix = 0)
    {
        jal_admin_sqe s{};
        s.opcode = opcode;
        s.data_addr = len ? 0x120000 : 0;
        s.data_len = len;
        size_t i = 0;
        for (uint32_t v : cdw) s.cdw[i++] = v;
        bytes.push_back(0);
        bytes.push_back(fix);
        const auto* p = reinterpret_cast<const uint8_t*>(&s);
        bytes.insert(bytes.end(), p, p + sizeof s);
        return *this;
    }
};

void admin_seeds()
{
    put("admin", "identify", AdminSeq{}.cmd(JAL_ADMIN_IDENTIFY, {}, 4096).bytes);
    put("admin", "queries",
        AdminSeq{}
            .cmd(JAL_ADMIN_GET_TELEMETRY, {}, 4096)
            .cmd(JAL_ADMIN_GET_SLICE_MAP, {}, 4096)
            .cmd(JAL_ADMIN_GET_LOG, {JAL_LOG_EVENTS, 0}, 4096)
            .cmd(JAL_ADMIN_GET_HBM_REPORT, {0, 4}, 8192)
            .cmd(JAL_ADMIN_SET_FEATURE, {JAL_FEATURE_POWER_LIMIT, 400000})
            .cmd(JAL_ADMIN_GET_FEATURE, {JAL_FEATURE_POWER_LIMIT})
            .bytes);
    // Context 0's id comes from the first command's result (fix-up 8: cdw[0] = results[0]),
    // the allocation's address from its reply (fix-up 16).
    put("admin", "memory",
        AdminSeq{}
            .cmd(JAL_ADMIN_CREATE_CONTEXT, {})
            .cmd(JAL_ADMIN_ALLOC_MEMORY, {0, 4u << 20, 0, JAL_PLACE_INTERLEAVED, 0xf, 0, 0}, 56, 8)
            .cmd(JAL_ADMIN_GET_PLACEMENT, {0, 0, 0, 0}, 4096, 8 | 16)
            .cmd(JAL_ADMIN_FREE_MEMORY, {0, 0, 0}, 0, 8 | 16)
            .cmd(JAL_ADMIN_DESTROY_CONTEXT, {0}, 0, 8)
            .bytes);
    put("admin", "queue",
        AdminSeq{}
            .cmd(JAL_ADMIN_CREATE_CONTEXT, {})
            .cmd(JAL_ADMIN_CREATE_QUEUE, {0, 0x140000, 0, 64, 0x150000, 0, 1}, 0, 8)
            .cmd(JAL_ADMIN_QUEUE_STATUS, {1}, 4096, 8)
            .cmd(JAL_ADMIN_RESET_QUEUE, {1}, 0, 8)
            .cmd(JAL_ADMIN_DESTROY_QUEUE, {1}, 0, 8)
            .bytes);
    // Host windows (1.11): a context in host space 5, its windows added, removed, cleared.
    put("admin", "windows",
        AdminSeq{}
            .cmd(JAL_ADMIN_CREATE_CONTEXT, {5})
            .cmd(JAL_ADMIN_HOST_WINDOW, {JAL_WINDOW_ADD, 5, 0x140000, 0, 0x20000, 0})
            .cmd(JAL_ADMIN_CREATE_QUEUE, {0, 0x140000, 0, 64, 0x150000, 0, 1}, 0, 8)
            .cmd(JAL_ADMIN_HOST_WINDOW, {JAL_WINDOW_REMOVE, 5, 0x140000, 0, 0x20000, 0})
            .cmd(JAL_ADMIN_HOST_WINDOW, {JAL_WINDOW_CLEAR, 5})
            .bytes);
}

// fuzz-transport's messages: control byte, length, the message.
struct Messages {
    Bytes bytes;
    uint64_t id = 1;
    template <typename Msg>
    Messages& add(Msg m, uint16_t type, uint8_t fds = 0)
    {
        m.hdr.type = type;
        m.hdr.size = sizeof m;
        m.hdr.id = id++;
        bytes.push_back(fds);
        bytes.push_back(sizeof m);
        const auto* p = reinterpret_cast<const uint8_t*>(&m);
        bytes.insert(bytes.end(), p, p + sizeof m);
        return *this;
    }
    Messages& hello()
    {
        jal_msg_hello h{};
        h.proto_version = JAL_PROTO_VERSION;
        std::strcpy(h.client, "seed");
        return add(h, JAL_MSG_HELLO);
    }
};

void transport_seeds()
{
    put("transport", "hello", Messages{}.hello().bytes);
    jal_msg_reg read{}, write{};
    read.bar = write.bar = JAL_BAR_REGS;
    read.offset = JAL_REG_ID, read.width = 4;
    write.offset = 0x100, write.width = 8, write.value = 5;
    write.hdr.flags = JAL_MSG_F_ACK;
    put("transport", "registers",
        Messages{}.hello().add(read, JAL_MSG_REG_READ).add(write, JAL_MSG_REG_WRITE).bytes);
    jal_msg_mem_map map{};
    map.bus_addr = 0x100000, map.size = 64 << 10;
    put("transport", "memory",
        Messages{}.hello().add(map, JAL_MSG_MEM_MAP, 1).add(map, JAL_MSG_MEM_UNMAP).bytes);
    jal_msg_set_irq irq{};
    irq.vector = 1;
    struct Bare {
        jal_msg_hdr hdr;
    };
    put("transport", "irq-doorbells",
        Messages{}.hello().add(irq, JAL_MSG_SET_IRQ, 2).add(Bare{}, JAL_MSG_GET_DOORBELLS).bytes);
}

void tokenizer_seeds()
{
    put("tokenizer", "ascii", std::string("Hello, world! It's 123 (the end);"));
    put("tokenizer", "unicode",
        std::string("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80\n\n  x"));
    put("tokenizer", "specials", std::string("<|start|>user<|message|>hello<|end|>"));
    put("tokenizer", "invalid-utf8", std::string("ab\xff\xc3(\xed\xa0\x80\xf0\x9f\x98"));
}

// One fuses byte, then an image signed with the development key (JAL_SOURCE_DIR/keys).
void fw_image_seeds()
{
    std::ifstream in(std::string(JAL_SOURCE_DIR) + "/keys/dev-firmware-key.pem");
    const std::string key{std::istreambuf_iterator<char>(in), {}};
    Bytes body(128, 0);
    const std::uint32_t sp = 0x20040000u, pc = 0x41u;  // top of SRAM; `b .` at 0x40
    std::memcpy(body.data(), &sp, 4);
    std::memcpy(body.data() + 4, &pc, 4);
    body[0x40] = 0xfe;
    body[0x41] = 0xe7;
    jal::fwimage::SignInfo info{0x000200, 2, "seed-0.2.0"};
    auto with_fuses = [](std::uint8_t fuses, const Bytes& image) {
        Bytes b{fuses};
        b.insert(b.end(), image.begin(), image.end());
        return b;
    };
    const Bytes image = jal::fwimage::sign(body, info, key);
    put("fw-image", "signed", with_fuses(1, image));
    put("fw-image", "rolled-back", with_fuses(3, image));
    put("fw-image", "unsigned", with_fuses(0, body));
    put("fw-image", "truncated", with_fuses(0, Bytes(image.begin(), image.begin() + 300)));
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc != 2 || std::string(argv[1]) == "--help") {
        std::fprintf(stderr, "usage: make-fuzz-seeds DIR\n"
                             "Writes the fuzz targets' seed corpora as DIR/<target>/<name>.\n");
        return argc == 2 ? 0 : 2;
    }
    g_root = argv[1];
    try {
        gguf_seeds();
        code_seeds();
        admin_seeds();
        transport_seeds();
        tokenizer_seeds();
        fw_image_seeds();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make-fuzz-seeds: %s\n", e.what());
        return 1;
    }
    return 0;
}
