// Internal: the AVX2 kernels' scratch buffers, kept per host thread. An MMA that allocated
// and freed its buffers (64 KiB and more) on every call made glibc trim its arena on every
// free: an madvise, a TLB shootdown across the process's threads, and zero-filled page
// faults on the next use. Contents never carry from one call to the next (every use writes
// before it reads).
#pragma once

#include <cstddef>
#include <vector>

namespace jal::numerics {

// v with room for n elements, grown if needed (never shrunk here).
template <class T>
T* grown(std::vector<T>& v, size_t n)
{
    if (v.size() < n) v.resize(n);
    return v.data();
}

// After a call: a buffer a rare, huge tile grew past 1 MiB is given back, rather than kept
// by every thread that ever ran one.
template <class T>
void trimmed(std::vector<T>& v)
{
    if (v.capacity() * sizeof(T) > (size_t(1) << 20)) std::vector<T>().swap(v);
}

}  // namespace jal::numerics
