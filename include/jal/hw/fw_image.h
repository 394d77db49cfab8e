/* Signed firmware images, the two flash slots and the boot ROM's firmware-update unit
 * (since interface 1.6; docs/firmware.md 10).
 *
 * An image is a 256-byte header followed by the body, the raw flash contents the core runs
 * (vector table at offset 0). The header carries the version, the rollback counter, the
 * body's length and SHA-256, and an ECDSA P-256 signature (r || s, big-endian) over the
 * SHA-256 of the header's first JAL_FW_SIGNED_BYTES bytes. The chip's boot ROM checks it
 * against the public key it was made with before it runs a slot, and again before it
 * accepts an update; the rollback counter must not be below the chip's OTP fuses. */
#ifndef JAL_HW_FW_IMAGE_H
#define JAL_HW_FW_IMAGE_H

#include "compat.h"
#include "mgmt.h"

#define JAL_FW_IMAGE_MAGIC 0x4957464au /* 'JFWI' little-endian */
#define JAL_FW_IMAGE_FORMAT 1u
#define JAL_FW_HEADER_SIZE 256u
#define JAL_FW_SIGNED_BYTES 192u /* header bytes the signature covers (all before sig) */
#define JAL_FW_SLOT_BYTES (JAL_FW_HEADER_SIZE + JAL_MGMT_FLASH_SIZE) /* header + largest body */
#define JAL_FW_SLOTS 2u                                              /* A and B */
#define JAL_FW_MIN_BODY 64u /* a vector table and a little code */

struct jal_fw_image_header {
    uint32_t magic;       /* JAL_FW_IMAGE_MAGIC */
    uint32_t format;      /* JAL_FW_IMAGE_FORMAT */
    uint32_t header_size; /* JAL_FW_HEADER_SIZE */
    uint32_t fw_version;  /* major << 16 | minor << 8 | patch */
    uint32_t rollback;    /* security counter: refused below the chip's fuses */
    uint32_t body_len;    /* bytes after the header */
    uint32_t flags;       /* must be zero */
    uint32_t reserved0;
    uint8_t body_sha256[32];
    uint8_t key_id[8];    /* first bytes of SHA-256 of the signer's public key (DER), informative */
    char build[32];       /* NUL-terminated build identifier */
    uint8_t reserved[88]; /* zero; signed */
    uint8_t signature[64]; /* ECDSA P-256 r || s over SHA-256(header[0 .. SIGNED_BYTES)) */
};
JAL_ASSERT_SIZE(struct jal_fw_image_header, JAL_FW_HEADER_SIZE);
JAL_ASSERT_OFFSET(struct jal_fw_image_header, body_sha256, 32);
JAL_ASSERT_OFFSET(struct jal_fw_image_header, build, 72);
JAL_ASSERT_OFFSET(struct jal_fw_image_header, signature, JAL_FW_SIGNED_BYTES);

/* Why an image was refused (FW_ACTIVATE's result with status IMAGE_REJECTED, slot info,
 * host-side checks). */
enum jal_fw_image_error {
    JAL_FW_IMAGE_OK = 0,
    JAL_FW_IMAGE_NOT_SIGNED = 1,    /* no image header: a raw or foreign file */
    JAL_FW_IMAGE_BAD_FORMAT = 2,    /* header format, size or flags not understood */
    JAL_FW_IMAGE_TRUNCATED = 3,     /* fewer bytes than the header announces */
    JAL_FW_IMAGE_TOO_LONG = 4,      /* more bytes than announced, or larger than a slot */
    JAL_FW_IMAGE_BAD_HASH = 5,      /* the body does not match its hash: corrupted */
    JAL_FW_IMAGE_BAD_SIGNATURE = 6, /* not signed by the chip's key, or the header was altered */
    JAL_FW_IMAGE_ROLLED_BACK = 7,   /* rollback counter below the chip's fuses */
    JAL_FW_IMAGE_NOT_BOOTABLE = 8,  /* signed, but the body has no valid vector table */
    JAL_FW_IMAGE_EMPTY = 9,         /* the slot holds nothing */
};

static inline const char* jal_fw_image_error_name(uint32_t e)
{
    switch (e) {
    case JAL_FW_IMAGE_OK:
        return "ok";
    case JAL_FW_IMAGE_NOT_SIGNED:
        return "not a signed firmware image";
    case JAL_FW_IMAGE_BAD_FORMAT:
        return "unknown image format";
    case JAL_FW_IMAGE_TRUNCATED:
        return "truncated";
    case JAL_FW_IMAGE_TOO_LONG:
        return "too long";
    case JAL_FW_IMAGE_BAD_HASH:
        return "corrupted (body hash mismatch)";
    case JAL_FW_IMAGE_BAD_SIGNATURE:
        return "bad signature";
    case JAL_FW_IMAGE_ROLLED_BACK:
        return "rolled back";
    case JAL_FW_IMAGE_NOT_BOOTABLE:
        return "not bootable";
    case JAL_FW_IMAGE_EMPTY:
        return "empty";
    default:
        return "unknown reason";
    }
}

/* FW_STATUS reply. */
enum jal_fw_slot_state {
    JAL_FW_SLOT_EMPTY = 0,
    JAL_FW_SLOT_VALID = 1,   /* verified: signature, hash, rollback */
    JAL_FW_SLOT_INVALID = 2, /* see reject_reason */
};

struct jal_fw_slot_info {
    uint32_t state;         /* enum jal_fw_slot_state */
    uint32_t reject_reason; /* enum jal_fw_image_error when INVALID */
    uint32_t fw_version;
    uint32_t rollback;
    uint32_t body_len;
    uint32_t reserved0[3];
    char build[32];
};
JAL_ASSERT_SIZE(struct jal_fw_slot_info, 64);

#define JAL_FW_STATUS_TRIAL (1u << 0)        /* running slot is on trial: not yet confirmed */
#define JAL_FW_STATUS_FELL_BACK (1u << 1)    /* the last trial failed; running the previous slot */
#define JAL_FW_STATUS_UPDATE_READY (1u << 2) /* an activated image boots at the next reset */

struct jal_fw_status {
    uint32_t running_slot;   /* 0 = A, 1 = B */
    uint32_t flags;          /* JAL_FW_STATUS_* */
    uint32_t rollback_fuses; /* OTP rollback counter: images below it are refused */
    uint32_t failed_slot;    /* slot of the last failed trial, 0xffffffff if none */
    uint32_t staged_bytes;   /* bytes written to the inactive slot since its erase */
    uint32_t reserved0[3];
    uint8_t key_id[8]; /* first bytes of SHA-256 of the boot ROM's public key (DER) */
    uint8_t reserved1[24];
    struct jal_fw_slot_info slots[JAL_FW_SLOTS];
};
JAL_ASSERT_SIZE(struct jal_fw_status, 64 + 2 * 64);
JAL_ASSERT_OFFSET(struct jal_fw_status, slots, 64);

/* ---- FWU: the boot ROM's firmware-update unit in the management core's peripheral window.
 * It owns the two slots and the OTP fuses and verifies images with the boot ROM's key; the
 * firmware never writes a slot directly. Program the DMA registers, then write CMD; STATUS
 * holds the jal_status, DETAIL a jal_fw_image_error (ACTIVATE) or a byte count. ---- */
#define JAL_MGMT_FWU 0x8000u
#define JAL_FWU_FN JAL_MGMT_REG(JAL_MGMT_FWU, 0x00) /* host function of the DMA */
#define JAL_FWU_HOST_LO JAL_MGMT_REG(JAL_MGMT_FWU, 0x04)
#define JAL_FWU_HOST_HI JAL_MGMT_REG(JAL_MGMT_FWU, 0x08)
#define JAL_FWU_LEN JAL_MGMT_REG(JAL_MGMT_FWU, 0x0c)
#define JAL_FWU_OFFSET JAL_MGMT_REG(JAL_MGMT_FWU, 0x10) /* byte offset in the inactive slot */
#define JAL_FWU_CMD JAL_MGMT_REG(JAL_MGMT_FWU, 0x14)
#define JAL_FWU_STATUS JAL_MGMT_REG(JAL_MGMT_FWU, 0x18)          /* RO jal_status of the last CMD */
#define JAL_FWU_DETAIL JAL_MGMT_REG(JAL_MGMT_FWU, 0x1c)          /* RO */
#define JAL_FWU_RUNNING_VERSION JAL_MGMT_REG(JAL_MGMT_FWU, 0x20) /* RO header version booted */
/* Host memory -> inactive slot at OFFSET; offset 0 erases the slot first; writes must be
 * sequential. */
#define JAL_FWU_CMD_WRITE 1
#define JAL_FWU_CMD_ACTIVATE 2 /* verify the inactive slot; boot it on trial at the next reset */
#define JAL_FWU_CMD_STATUS 3   /* DMA a struct jal_fw_status to host memory */
#define JAL_FWU_CMD_CONFIRM 4  /* this boot reached READY: a trial image becomes the good one */

#endif
