#include "alloclab/format/synthetic.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace alloclab {
namespace {

// splitmix64: tiny, fast, and identical everywhere (unlike std::uniform_int_distribution).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : next() % n; }

 private:
  std::uint64_t state_;
};

// Hands out addresses the way a size-segregated malloc would: a freed address is reused by the
// next request of the same size, so frees and reuses look like a real program's.
class Generator {
 public:
  explicit Generator(const SyntheticOptions& options) : options_(options), rng_(options.seed) {
    trace_.metadata["tool"] = "alloclab generate";
    trace_.metadata["synthetic"] = {{"runs", options.runs}, {"seed", options.seed}};
    trace_.metadata["clock"] = "synthetic";
  }

  std::uint64_t alloc(std::uint64_t size, std::uint64_t alignment = 64) {
    auto& reuse = free_by_size_[size];
    std::uint64_t address;
    if (!reuse.empty()) {
      address = reuse.back();
      reuse.pop_back();
    } else {
      address = next_address_;
      next_address_ += (std::max<std::uint64_t>(size, 16) + 63) / 64 * 64;
    }
    sizes_[address] = size;
    Event e = base(Op::alloc);
    e.address = address;
    e.size = size;
    e.alignment = alignment;
    trace_.push_back(e);
    return address;
  }

  void free(std::uint64_t address) {
    Event e = base(Op::free);
    e.address = address;
    trace_.push_back(e);
    auto it = sizes_.find(address);
    free_by_size_[it->second].push_back(address);
    sizes_.erase(it);
  }

  void marker(Op op, std::string label = {}) {
    Event e = base(op);
    e.label = std::move(label);
    trace_.push_back(e);
  }

  void tick(std::uint64_t ns) { time_ += ns; }
  Rng& rng() { return rng_; }
  bool want_more(std::uint64_t runs_done) const {
    if (options_.min_events > 0) return trace_.size() < options_.min_events;
    return runs_done < options_.runs;
  }
  Trace take() { return std::move(trace_); }

  // Python-side bookkeeping: a few small short-lived objects between tensor operations. The same
  // `site` always makes the same objects, as the same line of a program would.
  void small_objects(std::uint64_t site) {
    Rng local(site * 7919 + options_.seed);
    const std::uint64_t count = 1 + local.below(4);
    std::uint64_t held[4];
    for (std::uint64_t k = 0; k < count; ++k) held[k] = alloc(16 * (1 + local.below(32)), 16);
    tick(200 + rng_.below(300));
    for (std::uint64_t k = count; k-- > 0;) free(held[k]);
  }

 private:
  Event base(Op op) {
    Event e;
    e.op = op;
    e.time_ns = time_;
    e.thread = 1;
    time_ += 20 + rng_.below(80);
    return e;
  }

  SyntheticOptions options_;
  Rng rng_;
  Trace trace_;
  std::uint64_t time_ = 1'000'000;
  std::uint64_t next_address_ = 0x7f0000000000ull;
  std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> free_by_size_;
  std::unordered_map<std::uint64_t, std::uint64_t> sizes_;
};

void cnn_run(Generator& g, std::uint64_t run) {
  // A ResNet-like stack at batch 1: (channels, spatial) per stage; residual inputs live on
  // for one more layer, and each convolution borrows a workspace.
  static constexpr std::uint64_t stages[][2] = {
      {64, 112}, {64, 56}, {128, 28}, {256, 14}, {512, 7}};
  g.marker(Op::run_begin, "forward " + std::to_string(run));
  std::uint64_t input = g.alloc(3 * 224 * 224 * 4);
  std::uint64_t residual = 0;
  std::uint64_t site = 0;
  for (const auto& stage : stages) {
    for (int layer = 0; layer < 4; ++layer) {
      g.small_objects(++site);
      const std::uint64_t workspace = g.alloc(stage[0] * 9 * 4 * 64, 4096);
      const std::uint64_t output = g.alloc(stage[0] * stage[1] * stage[1] * 4);
      g.tick(20'000 + g.rng().below(5000));
      g.free(workspace);
      if (residual) g.free(residual);
      residual = layer % 2 == 0 ? input : 0;
      if (!residual) g.free(input);
      input = output;
    }
  }
  if (residual) g.free(residual);
  const std::uint64_t logits = g.alloc(1000 * 4);
  g.free(input);
  g.tick(5000);
  g.free(logits);
  g.marker(Op::run_end);
}

void transformer_run(Generator& g, std::uint64_t run) {
  constexpr std::uint64_t d_model = 256, heads = 8, layers = 6;
  const std::uint64_t seq = 16 * (2 + g.rng().below(31));  // 32..512 tokens
  g.marker(Op::run_begin, "encode " + std::to_string(run) + " seq=" + std::to_string(seq));
  std::uint64_t x = g.alloc(seq * d_model * 4);
  for (std::uint64_t layer = 0; layer < layers; ++layer) {
    g.small_objects(layer);
    const std::uint64_t q = g.alloc(seq * d_model * 4);
    const std::uint64_t k = g.alloc(seq * d_model * 4);
    const std::uint64_t v = g.alloc(seq * d_model * 4);
    const std::uint64_t scores = g.alloc(heads * seq * seq * 4);
    g.tick(10'000 + seq * 40);
    const std::uint64_t probs = g.alloc(heads * seq * seq * 4);
    g.free(scores);
    const std::uint64_t attn = g.alloc(seq * d_model * 4);
    g.free(probs);
    g.free(q);
    g.free(k);
    g.free(v);
    const std::uint64_t hidden = g.alloc(seq * 4 * d_model * 4);
    g.tick(8'000 + seq * 30);
    const std::uint64_t out = g.alloc(seq * d_model * 4);
    g.free(hidden);
    g.free(attn);
    g.free(x);
    x = out;
  }
  g.free(x);
  g.marker(Op::run_end);
}

void random_step(Generator& g, std::vector<std::uint64_t>& live) {
  if (live.size() < 64 || (g.rng().below(2) == 0 && live.size() < 4096)) {
    const std::uint64_t bits = 4 + g.rng().below(17);  // 16 B .. 1 MiB, log-uniform
    const std::uint64_t size = (std::uint64_t{1} << bits) + g.rng().below(std::uint64_t{1} << bits);
    live.push_back(g.alloc(size, 16));
  } else {
    const std::size_t k = g.rng().below(live.size());
    g.free(live[k]);
    live[k] = live.back();
    live.pop_back();
  }
  g.tick(g.rng().below(200));
}

// Stack s's frame at depth d (0: outermost) is the function of its group at that depth: the
// stacks split into a geometrically growing number of groups, from one at the outermost frame
// to one per stack at the innermost, so neighbouring stacks share their outer frames.
void add_stacks(Trace& trace, const SyntheticOptions& options) {
  const std::uint32_t depth = std::max<std::uint32_t>(options.stack_depth, 1);
  const double stacks = options.stacks;
  std::unordered_map<std::uint64_t, std::uint32_t> frame_of;  // (depth, group) -> frame
  for (std::uint32_t s = 0; s < options.stacks; ++s) {
    std::vector<std::uint32_t> frames(depth);
    for (std::uint32_t d = 0; d < depth; ++d) {
      const double fraction = depth == 1 ? 1.0 : static_cast<double>(d) / (depth - 1);
      const auto groups = static_cast<std::uint64_t>(std::ceil(std::pow(stacks, fraction)));
      const std::uint64_t group = static_cast<std::uint64_t>(s) * groups / options.stacks;
      const std::uint64_t key = (static_cast<std::uint64_t>(d) << 40) | group;
      auto [it, added] = frame_of.try_emplace(key, 0);
      if (added) {
        const auto index = static_cast<std::uint64_t>(frame_of.size() - 1);
        it->second = trace.add_frame(
            StackFrame{0x400000 + 0x40 * index,
                       "depth" + std::to_string(d) + "_fn" + std::to_string(group), "synthetic"});
      }
      frames[depth - 1 - d] = it->second;  // innermost first
    }
    trace.add_stack(std::move(frames));
  }
  // Its own generator: the events do not depend on whether stacks are asked for.
  Rng rng(options.seed ^ 0x5157ACC5ull);
  for (std::size_t i = 0; i < trace.size(); ++i) {
    if (trace.op(i) != Op::alloc) continue;
    // Skewed: three allocations in four come from the first 32 stacks.
    const std::uint64_t r = rng.next();
    const std::uint64_t hot = std::min<std::uint64_t>(32, options.stacks);
    const std::uint64_t stack = (r & 3) != 0 ? (r >> 8) % hot : (r >> 8) % options.stacks;
    trace.set_stack_id(i, static_cast<std::uint32_t>(stack + 1));
  }
}

}  // namespace

std::optional<SyntheticShape> parse_synthetic_shape(std::string_view name) {
  if (name == "cnn") return SyntheticShape::cnn;
  if (name == "transformer") return SyntheticShape::transformer;
  if (name == "random") return SyntheticShape::random;
  return std::nullopt;
}

std::vector<std::string> synthetic_shape_names() {
  return {"cnn", "transformer", "random"};
}

Trace generate_synthetic(const SyntheticOptions& options) {
  Generator g(options);
  if (options.shape == SyntheticShape::random) {
    std::vector<std::uint64_t> live;
    const std::uint64_t steps = options.min_events ? options.min_events : options.runs * 1000;
    for (std::uint64_t step = 0; step < steps; ++step) random_step(g, live);
    for (std::uint64_t address : live) g.free(address);
  } else {
    for (std::uint64_t run = 0; g.want_more(run); ++run) {
      if (options.shape == SyntheticShape::cnn)
        cnn_run(g, run);
      else
        transformer_run(g, run);
    }
  }
  Trace trace = g.take();
  if (options.stacks > 0) {
    trace.metadata["synthetic"]["stacks"] = options.stacks;
    trace.metadata["synthetic"]["stack_depth"] = options.stack_depth;
    add_stacks(trace, options);
  }
  return trace;
}

}  // namespace alloclab
