// Spec strings and parameter values: what is accepted, and what the errors say.
#include <gtest/gtest.h>

#include <string>

#include "alloclab/strategies/params.hpp"
#include "strategy_test_support.hpp"

namespace alloclab {
namespace {

// The message of the SpecError `f` throws ("" if it throws none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

TEST(ParseSize, accepts_plain_byte_counts) {
  EXPECT_EQ(parse_size("0"), 0u);
  EXPECT_EQ(parse_size("1048576"), 1048576u);
  EXPECT_EQ(parse_size("17B"), 17u);
  EXPECT_EQ(parse_size("  42 "), 42u);
  EXPECT_EQ(parse_size("18446744073709551615"), 18446744073709551615u);
}

TEST(ParseSize, decimal_units_are_powers_of_1000) {
  EXPECT_EQ(parse_size("512KB"), 512000u);
  EXPECT_EQ(parse_size("3MB"), 3000000u);
  EXPECT_EQ(parse_size("2GB"), 2000000000u);
  EXPECT_EQ(parse_size("1TB"), 1000000000000u);
  EXPECT_EQ(parse_size("4K"), 4000u);  // the B may be left out
  EXPECT_EQ(parse_size("1.5GB"), 1500000000u);
}

TEST(ParseSize, binary_units_are_powers_of_1024) {
  EXPECT_EQ(parse_size("1KiB"), 1024u);
  EXPECT_EQ(parse_size("64MiB"), 64u << 20);
  EXPECT_EQ(parse_size("2GiB"), 2ULL << 30);
  EXPECT_EQ(parse_size("1TiB"), 1ULL << 40);
  EXPECT_EQ(parse_size("8Mi"), 8u << 20);
  EXPECT_EQ(parse_size("0.5KiB"), 512u);
  EXPECT_EQ(parse_size("1.25GiB"), 1342177280u);
  EXPECT_EQ(parse_size("2.50MB"), 2500000u);  // trailing zeros of the fraction do not matter
}

TEST(ParseSize, rejects_fractions_of_a_byte) {
  EXPECT_CONTAINS(error_of([] { parse_size("1.5"); }), "not a whole number of bytes");
  EXPECT_CONTAINS(error_of([] { parse_size("1.0001KB"); }), "not a whole number");
  EXPECT_CONTAINS(error_of([] { parse_size("0.3KiB"); }), "not a whole number");
}

TEST(ParseSize, rejects_negatives_garbage_and_unknown_units) {
  EXPECT_CONTAINS(error_of([] { parse_size("-1"); }), "cannot be negative");
  EXPECT_CONTAINS(error_of([] { parse_size("-1MiB"); }), "cannot be negative");
  EXPECT_CONTAINS(error_of([] { parse_size(""); }), "empty");
  EXPECT_CONTAINS(error_of([] { parse_size("abc"); }), "invalid size 'abc'");
  EXPECT_CONTAINS(error_of([] { parse_size("12XB"); }), "unknown unit 'XB'");
  EXPECT_CONTAINS(error_of([] { parse_size("12 MiB"); }), "unknown unit ' MiB'");
  EXPECT_CONTAINS(error_of([] { parse_size("1e9"); }), "unknown unit 'e9'");
  EXPECT_CONTAINS(error_of([] { parse_size("12mib"); }), "KiB MiB GiB TiB");
  EXPECT_CONTAINS(error_of([] { parse_size("+5"); }), "expected a byte count");
  EXPECT_CONTAINS(error_of([] { parse_size("5."); }), "expected a byte count");
  EXPECT_CONTAINS(error_of([] { parse_size(".5KiB"); }), "expected a byte count");
  EXPECT_CONTAINS(error_of([] { parse_size("0x10"); }), "unknown unit 'x10'");
}

TEST(ParseSize, unlimited_is_not_a_size) {
  EXPECT_CONTAINS(error_of([] { parse_size("unlimited"); }),
                  "leave the parameter out for no limit");
  EXPECT_CONTAINS(error_of([] { parse_size("inf"); }), "leave the parameter out");
}

TEST(ParseSize, rejects_values_past_64_bits) {
  EXPECT_CONTAINS(error_of([] { parse_size("18446744073709551616"); }), "too large");
  EXPECT_CONTAINS(error_of([] { parse_size("99999999999999999999999999"); }), "too large");
  EXPECT_CONTAINS(error_of([] { parse_size("16777216TiB"); }), "too large");  // 2^64
  EXPECT_EQ(parse_size("16777215.5TiB"), 18446743523953737728u);              // 2^64 - 2^39
  EXPECT_CONTAINS(error_of([] { parse_size("1.0000000000000000001GB"); }),
                  "too many decimal places");
}

TEST(ParseRatio, is_an_exact_decimal) {
  EXPECT_EQ(parse_ratio("1"), (Ratio{1, 1}));
  EXPECT_EQ(parse_ratio("1.5"), (Ratio{15, 10}));
  EXPECT_EQ(parse_ratio("1.70"), (Ratio{17, 10}));
  EXPECT_EQ(parse_ratio("1.7").max_capacity(10), 17u);  // exact: 1.7 * 10 is 17, not 16.99..
  EXPECT_EQ(parse_ratio("1.5").max_capacity(3), 4u);    // floor(4.5)
  EXPECT_EQ(parse_ratio("1000").max_capacity(1ULL << 62), UINT64_MAX);  // saturates
  EXPECT_CONTAINS(error_of([] { parse_ratio("-1"); }), "cannot be negative");
  EXPECT_CONTAINS(error_of([] { parse_ratio("1.5x"); }), "expected a decimal number");
  EXPECT_CONTAINS(error_of([] { parse_ratio("1e3"); }), "expected a decimal number");
}

TEST(SplitSpec, splits_name_and_params_in_order) {
  ParsedSpec spec = split_spec("fifo-shrink:max=64MiB,match=best-fit");
  EXPECT_EQ(spec.name, "fifo-shrink");
  ASSERT_EQ(spec.params.size(), 2u);
  EXPECT_EQ(spec.params[0], (std::pair<std::string, std::string>{"max", "64MiB"}));
  EXPECT_EQ(spec.params[1], (std::pair<std::string, std::string>{"match", "best-fit"}));
}

TEST(SplitSpec, name_alone_has_no_params) {
  ParsedSpec spec = split_spec("exact");
  EXPECT_EQ(spec.name, "exact");
  EXPECT_TRUE(spec.params.empty());
}

TEST(SplitSpec, trims_whitespace_around_tokens) {
  ParsedSpec spec = split_spec("  best-fit : round = 256 ,  max_ratio= 2 ");
  EXPECT_EQ(spec.name, "best-fit");
  ASSERT_EQ(spec.params.size(), 2u);
  EXPECT_EQ(spec.params[0], (std::pair<std::string, std::string>{"round", "256"}));
  EXPECT_EQ(spec.params[1], (std::pair<std::string, std::string>{"max_ratio", "2"}));
}

TEST(SplitSpec, rejects_malformed_specs_with_clear_messages) {
  EXPECT_CONTAINS(error_of([] { split_spec(""); }), "empty strategy spec");
  EXPECT_CONTAINS(error_of([] { split_spec("   "); }), "empty strategy spec");
  EXPECT_CONTAINS(error_of([] { split_spec(":max=1"); }), "has no name");
  EXPECT_CONTAINS(error_of([] { split_spec("exact:"); }), "but no parameters");
  EXPECT_CONTAINS(error_of([] { split_spec("exact:round"); }),
                  "parameter 'round' has no value (expected key=value)");
  EXPECT_CONTAINS(error_of([] { split_spec("exact:=4"); }), "'=4' has no key");
  EXPECT_CONTAINS(error_of([] { split_spec("exact:round="); }),
                  "parameter 'round' has an empty value");
  EXPECT_CONTAINS(error_of([] { split_spec("exact:round=1,,"); }), "stray ','");
  EXPECT_CONTAINS(error_of([] { split_spec("fifo-shrink:max=1,max=2"); }),
                  "parameter 'max' is given twice");
}

TEST(StrategyParams, unknown_key_lists_accepted_keys) {
  StrategyParams params("fifo-shrink", {{"maxx", "1"}});
  EXPECT_EQ(error_of([&] {
              params.check_keys({"round", "max", "max_items", "match", "max_ratio"});
            }),
            "fifo-shrink: unknown parameter 'maxx' (accepted: round, max, max_items, match, "
            "max_ratio)");
  StrategyParams none("passthrough", {{"round", "4"}});
  EXPECT_EQ(error_of([&] { none.check_keys({}); }),
            "passthrough: unknown parameter 'round' (passthrough takes no parameters)");
  EXPECT_NO_THROW(params.check_keys({"maxx"}));
}

TEST(StrategyParams, reads_values_with_fallbacks) {
  StrategyParams params("s", {{"max", "2KiB"}, {"n", "12"}, {"x", "0.25"}, {"m", "b"}});
  EXPECT_TRUE(params.has("max"));
  EXPECT_FALSE(params.has("min"));
  EXPECT_EQ(params.text("m"), "b");
  EXPECT_EQ(params.text("z"), std::nullopt);
  EXPECT_EQ(params.size("max", 7), 2048u);
  EXPECT_EQ(params.size("min", 7), 7u);
  EXPECT_EQ(params.count("n", 0), 12u);
  EXPECT_EQ(params.count("k", 3), 3u);
  EXPECT_DOUBLE_EQ(params.number("x", 1), 0.25);
  EXPECT_DOUBLE_EQ(params.number("y", 1), 1);
  EXPECT_EQ(params.choice("m", {"a", "b"}, "a"), "b");
  EXPECT_EQ(params.choice("q", {"a", "b"}, "a"), "a");
  EXPECT_EQ(params.ratio("x"), (Ratio{25, 100}));
  EXPECT_EQ(params.ratio("y"), std::nullopt);
}

TEST(StrategyParams, bad_values_name_the_key_the_value_and_what_is_expected) {
  StrategyParams params("fifo-shrink", {{"max", "12XB"},
                                        {"max_items", "-3"},
                                        {"n", "1k"},
                                        {"match", "lru"},
                                        {"x", "nan"},
                                        {"big", "99999999999999999999"}});
  EXPECT_CONTAINS(error_of([&] { params.size("max", 0); }),
                  "fifo-shrink: bad value '12XB' for 'max': unknown unit 'XB'");
  EXPECT_CONTAINS(error_of([&] { params.count("max_items", 0); }),
                  "bad value '-3' for 'max_items': expected a whole number");
  EXPECT_CONTAINS(error_of([&] { params.count("n", 0); }),
                  "bad value '1k' for 'n': expected a whole number");
  EXPECT_CONTAINS(error_of([&] { params.count("big", 0); }), "too large");
  EXPECT_EQ(error_of([&] {
              params.choice("match", {"exact", "best-fit"}, "exact");
            }),
            "fifo-shrink: bad value 'lru' for 'match': expected one of: exact, best-fit");
  EXPECT_CONTAINS(error_of([&] { params.number("x", 0); }), "expected a finite number");
  EXPECT_CONTAINS(error_of([&] { params.ratio("match"); }),
                  "bad value 'lru' for 'match': expected a decimal number");
}

}  // namespace
}  // namespace alloclab
