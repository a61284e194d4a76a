#pragma once
// The first failed request of a replay (FirstFailure) as reports and terminals show it: its JSON
// section, read back, and the out-of-memory message PyTorch's caching allocator would throw
// there. docs/report-schema.md ("first_failure") documents the keys.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "alloclab/replay/metrics.hpp"

namespace alloclab {

// PyTorch's format_size (c10): "512 bytes", "1.50 KiB", "20.00 MiB", "2.00 GiB", two decimals,
// each unit used up to and including 1024 of the one below.
std::string pytorch_format_size(std::uint64_t bytes);

// The text of the OutOfMemoryError that DeviceCachingAllocator::malloc throws, with this
// failure's figures: what was asked of the upstream ("Tried to allocate"), the strategy's own
// limit ("allowed"), the bytes handed out and the bytes reserved but not handed out. The sentence
// on the GPU's total capacity and free memory and the per-process list, which only the device
// can tell, are left out.
std::string out_of_memory_message(const FirstFailure& failure);

// The "first_failure" object of a result, derived figures (cached bytes, both fragmentations,
// the message) included.
nlohmann::json first_failure_json(const FirstFailure& failure);
// Reads back what first_failure_json wrote; the derived figures are recomputed, not read.
// Throws InputError naming `where` and the key that is missing or wrong.
FirstFailure first_failure_from_json(const nlohmann::json& j, const std::string& where);

// The block of first_failures_text for one result (which must have a first_failure): the request,
// the device's state, PyTorch's message; lines ending in '\n'.
std::string first_failure_text(const StrategyResult& result);

// For the terminal, under the comparison table: a block per strategy with a failed request (the
// request, the device's state, PyTorch's message), and a line saying that the replays stopped
// at their first failure when they did. Empty when no request failed.
std::string first_failures_text(const std::vector<StrategyResult>& results);

}  // namespace alloclab
