// jal-emu --trace FILE: events in the Chrome trace event format (the JSON array form that
// Perfetto's UI, ui.perfetto.dev, and chrome://tracing open), docs/emulator.md "Traces".
//
// Two clocks, each in its own process of the trace (pid), so they are never compared:
// chip N's slices in modelled time (what the timing model charges, the figures jal-run
// reports) and chip N's queues, firmware and admin traffic in wall-clock time since the
// emulator started.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace jal::emu {

class TraceWriter {
public:
    // Creates (truncates) `path`; throws std::runtime_error naming it when it cannot.
    explicit TraceWriter(const std::string& path);
    ~TraceWriter();  // close()
    TraceWriter(const TraceWriter&) = delete;
    TraceWriter& operator=(const TraceWriter&) = delete;

    // One event object; thread-safe. Events after close() are dropped.
    void event(const nlohmann::json& e);
    // Ends the array and flushes: the file is complete JSON from then on.
    void close();

    // "X": a span [ts, ts + dur) on thread tid of process pid, times in microseconds.
    void complete(int pid, int tid, std::string_view name, std::string_view cat, double ts_us,
                  double dur_us, nlohmann::json args = nullptr);
    // "i": a moment on thread tid.
    void instant(int pid, int tid, std::string_view name, std::string_view cat, double ts_us,
                 nlohmann::json args = nullptr);
    // "C": the values of a counter track of process pid from ts on.
    void counter(int pid, std::string_view name, double ts_us, nlohmann::json values);
    // "M": how the UI names a process or a thread.
    void name_process(int pid, std::string_view name, int sort_index);
    void name_thread(int pid, int tid, std::string_view name);

    // Wall-clock microseconds since the trace was opened.
    double wall_us() const;

private:
    std::mutex m_;
    std::FILE* f_ = nullptr;
    bool first_ = true;
    std::chrono::steady_clock::time_point t0_;
};

// Process ids of chip `chip`'s two clocks, and the threads of its wall-clock process.
inline int modelled_pid(std::uint32_t chip)
{
    return static_cast<int>(2 * chip + 1);
}
inline int wall_pid(std::uint32_t chip)
{
    return static_cast<int>(2 * chip + 2);
}
inline constexpr int kFirmwareTid = 1000;  // firmware log lines and POST codes
inline constexpr int kPowerTid = 1001;     // (counters are per process; named for clarity)
inline constexpr int kAdminTid = 1002;     // admin-queue commands (emu/trace/admin_trace.hpp)
// --trace-ops: slice s's track of engine `track` (0 the scalar unit's stalls, then DMA,
// matrix, vector, network) in the modelled-time process.
inline constexpr int kOpTracks = 5;
inline int op_tid(std::uint32_t slice, std::uint32_t track)
{
    return static_cast<int>(100 + slice * kOpTracks + track);
}

// What a chip's components need to trace: the writer (null: not tracing) and the chip.
struct ChipTrace {
    std::shared_ptr<TraceWriter> writer;
    std::uint32_t chip = 0;
    std::uint64_t op_slices = 0;  // --trace-ops: physical slices whose engine ops are traced
    explicit operator bool() const { return writer != nullptr; }
};

}  // namespace jal::emu
