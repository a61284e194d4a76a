// Damaged input of every kind ends in a trace or an InputError: never a crash, never another
// exception type. Mutations are deterministic so a failure reproduces.
#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>

#include "alloclab/format/interchange/csv.hpp"
#include "alloclab/format/interchange/rmm_log.hpp"
#include "alloclab/format/interchange/torch_snapshot.hpp"
#include "interchange_test_util.hpp"

namespace alloclab {
namespace {

// A small deterministic generator (SplitMix64).
struct Random {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) { return n == 0 ? 0 : next() % n; }
};

std::string mutate(const std::string& text, Random& random) {
  std::string out = text;
  const char interesting[] = {',', '"', '\n', '\r', '\0', '-', 'x', '9', ':', '{', '}', '[', ']'};
  switch (random.below(4)) {
    case 0:  // truncate
      out.resize(random.below(out.size() + 1));
      break;
    case 1:  // overwrite a byte with something a parser cares about
      if (!out.empty())
        out[random.below(out.size())] = interesting[random.below(sizeof interesting)];
      break;
    case 2:  // insert a random byte
      out.insert(out.begin() + static_cast<long>(random.below(out.size() + 1)),
                 static_cast<char>(random.next()));
      break;
    default:  // duplicate a slice
      if (!out.empty()) {
        const std::size_t from = random.below(out.size());
        out.insert(random.below(out.size()), out.substr(from, random.below(20)));
      }
  }
  return out;
}

template <class Parse>
void survive_mutations(const std::string& seed_file, Parse parse) {
  const std::string seed = test::file_text(test::data_file(seed_file));
  ASSERT_FALSE(seed.empty());
  Random random{0x5eed};
  for (int i = 0; i < 400; ++i) {
    std::string text = seed;
    for (std::size_t m = 0, n = 1 + random.below(3); m < n; ++m) text = mutate(text, random);
    try {
      parse(text);
    } catch (const InputError&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << seed_file << " mutation " << i << ": " << e.what();
    }
  }
}

TEST(GarbageInput, csv_reader_only_throws_input_errors) {
  survive_mutations("all_columns.csv", [](const std::string& text) {
    std::istringstream in(text);
    parse_csv(in, "m.csv");
  });
}

TEST(GarbageInput, rmm_reader_only_throws_input_errors) {
  survive_mutations("rmm_basic.rmm.csv", [](const std::string& text) {
    std::istringstream in(text);
    parse_rmm_log(in, "m.log");
  });
}

TEST(GarbageInput, snapshot_reader_only_throws_input_errors) {
  survive_mutations("snapshot_basic.json",
                    [](const std::string& text) { parse_torch_snapshot_json(text, "m.json"); });
}

TEST(GarbageInput, snapshot_pickle_reader_only_throws_input_errors) {
  for (const char* seed : {"snapshot_torch.p2.pickle", "snapshot_torch.p4.pickle"})
    survive_mutations(
        seed, [](const std::string& bytes) { parse_torch_snapshot_pickle(bytes, "m.pickle"); });
}

}  // namespace
}  // namespace alloclab
