#pragma once
// A training-shaped allocation sequence at realistic size for `advise --pytorch`: persistent
// weights, then steps of a 24-layer model whose sequence length changes every step (activations
// of 3 to 96 MiB kept for the backward pass, attention buffers of up to 16 MiB, small
// temporaries), and every 50 steps one evaluation buffer of 300 to 600 MiB. Sizes span both of
// the model's pools and every max_split_size_mb of the grid up to 512 MiB. Deterministic (its
// own generator), about 190 operations per step.
#include <cstdint>
#include <vector>

namespace alloclab::test {

struct WorkloadOp {
  bool alloc = true;
  std::uint64_t addr = 0;
  std::uint64_t size = 0;  // alloc only
};

inline std::vector<WorkloadOp> training_workload(std::size_t steps) {
  constexpr std::uint64_t KiB = 1024, MiB = 1024 * KiB;
  std::vector<WorkloadOp> ops;
  std::uint64_t next_addr = 0x7f0000000000;
  std::uint64_t state = 12345;
  const auto random = [&](std::uint64_t n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % n;
  };
  const auto alloc = [&](std::uint64_t size) {
    const std::uint64_t addr = next_addr;
    next_addr += 0x100000;  // distinct addresses: pairing never depends on reuse
    ops.push_back({true, addr, size});
    return addr;
  };
  const auto free = [&](std::uint64_t addr) { ops.push_back({false, addr, 0}); };

  for (int w = 0; w < 30; ++w) alloc((1 + w % 8) * 4 * MiB + 512 * static_cast<std::uint64_t>(w));
  for (std::size_t step = 0; step < steps; ++step) {
    const std::uint64_t length = 16 + random(496);  // tokens
    std::vector<std::uint64_t> activations;
    for (int layer = 0; layer < 24; ++layer) {
      activations.push_back(alloc(length * 64 * KiB + 4096 * static_cast<std::uint64_t>(layer)));
      const std::uint64_t attention = alloc(length * length * 64);
      free(alloc(length * 8 * KiB + 512));
      free(attention);
    }
    for (std::size_t layer = activations.size(); layer-- > 0;) {
      const std::uint64_t grad = alloc(length * 64 * KiB);
      free(activations[layer]);
      free(grad);
    }
    if (step % 50 == 49) free(alloc(300 * MiB + random(300) * MiB));
  }
  return ops;
}

}  // namespace alloclab::test
