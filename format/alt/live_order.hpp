#pragma once
// Which of a group's allocations are still live, in the order they were made (.alt version 7).
// A free is coded as how many live allocations are newer than the one it frees. Counting
// allocations instead (versions 4 to 6) also counts the ones freed since: when a program frees a
// random one of N live blocks, the count back is spread geometrically over about e * N values
// (13.4 bits for N = 4096), the live rank evenly over N (12 bits).
//
// Encoder and decoder keep one bit per allocation and a tree of counts with 8 children to a
// node: the live ones in each 64-bit word, in each 8 words, each 64, and so on. Allocating and
// freeing change one count per level; a rank adds, on each level, the counts of the siblings
// after the node it came through, 8 at a time without a branch that depends on the data. On
// malloc_churn that costs the recorder's writer thread a few nanoseconds per free, where a
// Fenwick tree's walks (tried first) cost 16: each of its walks ended in a mispredicted branch.
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace alloclab::detail {

class LiveOrder {
 public:
  void clear() {
    words_.clear();
    word_live_.clear();
    levels_.clear();
    size_ = 0;
    live_ = 0;
  }

  // Allocations so far (ordinals 0 .. size() - 1), and how many of them are live.
  std::uint32_t size() const { return size_; }
  std::uint32_t live() const { return live_; }

  // The next allocation; one at address 0 is never live (nothing can free it by reference).
  [[gnu::always_inline]] void push(bool live) {
    if (size_ % 64 == 0) add_word();
    if (live) {
      const std::size_t word = words_.size() - 1;
      words_[word] |= bit(size_);
      change(word, 1);
      ++live_;
    }
    ++size_;
  }

  bool is_live(std::uint32_t ordinal) const {
    return ordinal < size_ && (words_[ordinal / 64] & bit(ordinal)) != 0;
  }

  // `ordinal` is no longer live (nothing changes if it was not).
  void remove(std::uint32_t ordinal) {
    if (!is_live(ordinal)) return;
    words_[ordinal / 64] &= ~bit(ordinal);
    change(ordinal / 64, ~std::uint32_t{0});  // minus one, modulo 2^32
    --live_;
  }

  // How many live allocations were made after `ordinal` (below size()).
  std::uint32_t newer_live(std::uint32_t ordinal) const {
    std::size_t node = ordinal / 64;
    std::uint32_t n = bits_set(words_[node] & ~(bit(ordinal) * 2 - 1));  // above it in its word
    n += siblings_after(word_live_.data(), node);
    for (const std::vector<std::uint32_t>& level : levels_) {
      node /= 8;
      n += siblings_after(level.data(), node);
    }
    return n;
  }

  // The live allocation with `newer` live ones after it; size() when there is none. Up from the
  // newest word, as far as the live ones after it reach (most programs free what they made
  // last: one word's group), then down to its word.
  std::uint32_t with_newer_live(std::uint32_t newer) const {
    if (newer >= live_) return size_;
    const std::size_t newest = words_.size() - 1;
    if (newer < word_live_[newest])  // among the last 64 allocations: no counting at all
      return static_cast<std::uint32_t>(newest * 64 +
                                        select(words_[newest], word_live_[newest] - 1 - newer));
    std::size_t level = 0;                 // 0: the words' counts, l: levels_[l - 1]
    std::size_t last = words_.size() - 1;  // the newest node on it not counted off yet
    for (;;) {
      const std::size_t first = last & ~std::size_t{7};
      const std::uint32_t under = level == 0 ? sum(word_live_.data(), first, last)
                                             : sum(levels_[level - 1].data(), first, last);
      if (newer < under) break;
      newer -= under;  // all of the parent: go on with its older siblings
      last = last / 8 - 1;
      ++level;
    }
    const std::size_t first = last & ~std::size_t{7};
    std::size_t node = level == 0 ? pick(word_live_.data(), first, last, newer)
                                  : pick(levels_[level - 1].data(), first, last, newer);
    for (; level > 1; --level)
      node = pick(levels_[level - 2].data(), node * 8, node * 8 + 7, newer);
    if (level == 1) node = pick(word_live_.data(), node * 8, node * 8 + 7, newer);
    // The set bit with `newer` set bits above it.
    return static_cast<std::uint32_t>(node * 64 +
                                      select(words_[node], word_live_[node] - 1 - newer));
  }

 private:
  static std::uint64_t bit(std::uint32_t ordinal) { return std::uint64_t{1} << (ordinal % 64); }

  // The counts of the nodes after `node` among its 8 siblings (the arrays are whole groups of
  // 8, the missing nodes at 0). Masks, not a condition per count: a compiler turns the
  // condition into a loop from `node` on, which mispredicts its end.
  static std::uint32_t siblings_after(const std::uint8_t* counts, std::size_t node) {
    std::uint64_t group;
    __builtin_memcpy(&group, counts + (node & ~std::size_t{7}), sizeof group);
    group &= (~std::uint64_t{0} << (8 * (node & 7))) << 8;
    // Up to 8 * 64: the bytes are added in 16-bit lanes.
    const std::uint64_t pairs =
        (group & 0x00FF00FF00FF00FFull) + (group >> 8 & 0x00FF00FF00FF00FFull);
    return static_cast<std::uint32_t>((pairs * 0x0001000100010001ull) >> 48);
  }
  static std::uint32_t siblings_after(const std::uint32_t* counts, std::size_t node) {
    const std::uint32_t* group = counts + (node & ~std::size_t{7});
    const std::uint32_t* mask = after_masks[node & 7];
    std::uint32_t n = 0;
    for (std::size_t k = 0; k < 8; ++k) n += group[k] & mask[k];
    return n;
  }
  static constexpr std::uint32_t all = ~std::uint32_t{0};
  static constexpr std::uint32_t after_masks[8][8] = {{0, all, all, all, all, all, all, all},
                                                      {0, 0, all, all, all, all, all, all},
                                                      {0, 0, 0, all, all, all, all, all},
                                                      {0, 0, 0, 0, all, all, all, all},
                                                      {0, 0, 0, 0, 0, all, all, all},
                                                      {0, 0, 0, 0, 0, 0, all, all},
                                                      {0, 0, 0, 0, 0, 0, 0, all},
                                                      {0, 0, 0, 0, 0, 0, 0, 0}};

  // The live ones under nodes first..last, siblings (a whole group may be past the end: 0s).
  template <typename Count>
  static std::uint32_t sum(const Count* counts, std::size_t first, std::size_t last) {
    std::uint32_t n = 0;
    for (std::size_t k = 0; k < 8; ++k) n += first + k <= last ? counts[first + k] : 0;
    return n;
  }

  // Of the sibling nodes first..last, the one under which the live one with `newer` newer ones
  // lies (there is one), taking off `newer` those under the nodes after it. Counted, not
  // searched for: a search ends with a mispredicted branch, on every level.
  template <typename Count>
  static std::size_t pick(const Count* counts, std::size_t first, std::size_t last,
                          std::uint32_t& newer) {
    std::uint32_t from[9];  // from[k]: the live ones under nodes first + k .. last
    from[8] = 0;
    for (std::size_t k = 8; k-- > 0;)
      from[k] = from[k + 1] + (first + k <= last ? counts[first + k] : 0);
    std::size_t passing = 0;  // nodes k with from[k] > newer: 0 .. the wanted one
    for (std::size_t k = 0; k < 8; ++k) passing += from[k] > newer;
    newer -= from[passing];
    return first + passing - 1;
  }

  // One count per level above the words; `delta` wraps for minus one.
  void change(std::size_t word, std::uint32_t delta) {
    word_live_[word] = static_cast<std::uint8_t>(word_live_[word] + delta);
    std::size_t node = word;
    for (std::vector<std::uint32_t>& level : levels_) {
      node /= 8;
      level[node] += delta;
    }
  }

  // A new word, and as many levels as it takes for the top one to fit in one group of 8.
  void add_word() {
    const std::size_t word = words_.size();
    words_.push_back(0);
    if (word % 8 == 0) word_live_.resize(word + 8, 0);
    std::size_t nodes = word + 1;  // on the level below
    for (std::size_t l = 0; nodes > 8 || l < levels_.size(); ++l) {
      nodes = (nodes + 7) / 8;
      if (l == levels_.size()) {
        // The new top level's first node counts everything so far.
        levels_.emplace_back(8, 0);
        levels_.back()[0] = live_;
      }
      if (levels_[l].size() < (nodes + 7) / 8 * 8) levels_[l].resize((nodes + 7) / 8 * 8, 0);
    }
  }

  // Without the POPCNT instruction (not in the x86-64 baseline) std::popcount is a call.
  static std::uint64_t byte_counts(std::uint64_t w) {
    w -= (w >> 1) & 0x5555555555555555ull;
    w = (w & 0x3333333333333333ull) + ((w >> 2) & 0x3333333333333333ull);
    return (w + (w >> 4)) & 0x0F0F0F0F0F0F0F0Full;
  }
  static std::uint32_t bits_set(std::uint64_t w) {
    return static_cast<std::uint32_t>((byte_counts(w) * 0x0101010101010101ull) >> 56);
  }

  // The position of the set bit of `w` with `rank` set bits below it (rank < bits_set(w)).
  static unsigned select(std::uint64_t w, std::uint32_t rank) {
    constexpr std::uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    const std::uint64_t through = byte_counts(w) * ones;  // byte k: set bits in bytes 0..k
    // Bytes whose running count is at most `rank` lie wholly below the wanted bit.
    const std::uint64_t below = ((rank * ones | highs) - through) & highs;
    const unsigned byte = static_cast<unsigned>(((below >> 7) * ones) >> 56);
    if (byte > 0) rank -= static_cast<std::uint32_t>(through >> (8 * (byte - 1)) & 0xFF);
    return 8 * byte + select_in_byte[w >> (8 * byte) & 0xFF][rank];
  }

  // [b][r]: the position of the set bit of b with r set bits below it.
  static constexpr auto select_in_byte = [] {
    std::array<std::array<std::uint8_t, 8>, 256> table{};
    for (unsigned b = 0; b < 256; ++b) {
      unsigned r = 0;
      for (unsigned bit = 0; bit < 8; ++bit)
        if (b >> bit & 1) table[b][r++] = static_cast<std::uint8_t>(bit);
    }
    return table;
  }();

  std::vector<std::uint64_t> words_;     // the last one is being filled
  std::vector<std::uint8_t> word_live_;  // live ones in each word, in whole groups of 8
  // levels_[0]: live ones in each 8 words, levels_[1]: each 64, ...; the last has 8 nodes.
  std::vector<std::vector<std::uint32_t>> levels_;
  std::uint32_t size_ = 0;
  std::uint32_t live_ = 0;
};

}  // namespace alloclab::detail
