// A runtime's sequence slots (one a sequence it holds, each with its cache): finding one by
// its id and claiming a free one. Every architecture's runtime keeps its own Slot (what its
// cache is) with `used` and `len` members.
#pragma once

#include <cstddef>
#include <vector>

#include <fmt/format.h>

#include <jal/error.hpp>

namespace jal::model::detail {

// The slot of sequence seq; throws INVALID_FIELD for an id no create_sequence returned (or
// one freed since).
template <class Slot>
const Slot& used_slot(const std::vector<Slot>& slots, int seq)
{
    if (seq < 0 || static_cast<size_t>(seq) >= slots.size() ||
        !slots[static_cast<size_t>(seq)].used)
        throw Error(JAL_STATUS_INVALID_FIELD, fmt::format("model runtime: no sequence {}", seq));
    return slots[static_cast<size_t>(seq)];
}

// Claims the first free slot, empty, and returns its id; throws BUSY when every slot is in use.
template <class Slot>
int claim_slot(std::vector<Slot>& slots)
{
    for (size_t j = 0; j < slots.size(); j++)
        if (!slots[j].used) {
            slots[j].used = true;
            slots[j].len = 0;
            return static_cast<int>(j);
        }
    throw Error(JAL_STATUS_BUSY,
                fmt::format("model runtime: all {} sequence slots are in use", slots.size()));
}

}  // namespace jal::model::detail
