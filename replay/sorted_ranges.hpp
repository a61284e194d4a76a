#pragma once
// SortedRanges: disjoint address ranges [start, start + size), kept sorted by start in one
// vector, so that finding the range that holds an address is a binary search over contiguous
// memory rather than a walk down a tree's nodes. For an index looked up far more often than it
// changes, such as the upstream blocks a strategy holds, looked up at every free:
// - adding a range after all others (as a bump-allocating upstream hands them out) is an
//   append; adding one before others moves those after it;
// - removing a range only marks it; the next lookup drops every marked range in one pass, so a
//   burst of removals (a cache given back) costs one pass, not one per range.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace alloclab {

class SortedRanges {
 public:
  struct Range {
    std::uint64_t start = 0, size = 0;
  };

  SortedRanges() = default;
  // The ranges given, in any order (disjoint, each start once).
  explicit SortedRanges(const std::vector<Range>& ranges) {
    entries_.reserve(ranges.size());
    for (const Range& r : ranges) entries_.push_back(Entry{r.start, r.size, true});
    std::sort(entries_.begin(), entries_.end(),
              [](const Entry& a, const Entry& b) { return a.start < b.start; });
  }

  std::size_t size() const { return entries_.size() - removed_; }

  // Adds the range at `start`, or gives the one there `size` bytes. The caller keeps ranges
  // disjoint.
  void assign(std::uint64_t start, std::uint64_t size) {
    if (entries_.empty() || entries_.back().start < start) {
      entries_.push_back(Entry{start, size, true});
      return;
    }
    const auto at = first_not_before(start);
    if (at == entries_.end() || at->start != start) {
      entries_.insert(at, Entry{start, size, true});
      return;
    }
    if (!at->live) --removed_;
    *at = Entry{start, size, true};
  }

  // Removes the range at `start`; false if none starts there.
  bool erase(std::uint64_t start) {
    const auto at = first_not_before(start);
    if (at == entries_.end() || at->start != start || !at->live) return false;
    at->live = false;
    ++removed_;
    return true;
  }

  // The range holding `address`, if any.
  std::optional<Range> find_containing(std::uint64_t address) {
    if (removed_ > 0) drop_removed();
    const auto after =
        std::upper_bound(entries_.begin(), entries_.end(), address,
                         [](std::uint64_t a, const Entry& e) { return a < e.start; });
    if (after == entries_.begin()) return std::nullopt;
    const Entry& e = *std::prev(after);
    if (address - e.start >= e.size) return std::nullopt;
    return Range{e.start, e.size};
  }

 private:
  struct Entry {
    std::uint64_t start = 0, size = 0;
    bool live = true;  // false: removed, not yet dropped
  };

  std::vector<Entry>::iterator first_not_before(std::uint64_t start) {
    return std::lower_bound(entries_.begin(), entries_.end(), start,
                            [](const Entry& e, std::uint64_t s) { return e.start < s; });
  }

  void drop_removed() {
    std::erase_if(entries_, [](const Entry& e) { return !e.live; });
    removed_ = 0;
  }

  std::vector<Entry> entries_;  // by start; removed ones too, until dropped
  std::size_t removed_ = 0;     // entries not live
};

}  // namespace alloclab
