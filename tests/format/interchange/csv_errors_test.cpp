// Bad CSV input: each is refused with "file:line: what", never half-read.
#include <gtest/gtest.h>

#include <sstream>

#include "alloclab/format/interchange/csv.hpp"
#include "interchange_test_util.hpp"

namespace alloclab {
namespace {

using test::data_file;
using test::input_error;

std::string file_error(const std::string& name) {
  return input_error([&] { read_csv(data_file(name)); });
}

std::string text_error(const std::string& text) {
  std::istringstream in(text);
  return input_error([&] { parse_csv(in, "t.csv"); });
}

TEST(Csv, rejects_unknown_action_with_line_number) {
  EXPECT_EQ(file_error("bad_action.csv"),
            data_file("bad_action.csv") +
                ":4: unknown action 'allocc' (expected alloc, free, run_begin, run_end, mark)");
}

TEST(Csv, rejects_missing_required_columns_listing_them) {
  EXPECT_EQ(file_error("bad_missing_columns.csv"),
            data_file("bad_missing_columns.csv") +
                ":1: missing required column(s) 'address', 'size' (the first non-comment line "
                "must be a header naming action, address and size)");
}

TEST(Csv, rejects_trailing_garbage_in_a_number) {
  EXPECT_EQ(
      file_error("bad_number.csv"),
      data_file("bad_number.csv") + ":3: bad number '12abc' in column size (expected digits)");
}

TEST(Csv, rejects_negative_numbers) {
  EXPECT_EQ(file_error("bad_negative.csv"),
            data_file("bad_negative.csv") + ":3: negative number '-5' in column time_ns");
}

TEST(Csv, accepts_2_pow_64_minus_1_and_rejects_2_pow_64) {
  EXPECT_EQ(file_error("bad_overflow.csv"),
            data_file("bad_overflow.csv") +
                ":3: number '18446744073709551616' in column size does not fit in 64 bits");
  std::istringstream in("action,address,size\nalloc,0x1000,18446744073709551615\n");
  EXPECT_EQ(parse_csv(in, "max.csv").size_of(0), 18446744073709551615u);
}

TEST(Csv, rejects_hex_overflowing_64_bits) {
  EXPECT_EQ(file_error("bad_hex_overflow.csv"),
            data_file("bad_hex_overflow.csv") +
                ":2: number '0x10000000000000000' in column address does not fit in 64 bits");
}

TEST(Csv, rejects_bad_hex_counting_blank_lines) {
  EXPECT_EQ(file_error("bad_hex.csv"),
            data_file("bad_hex.csv") +
                ":3: bad number '0xZZ' in column address (expected hex digits after 0x)");
}

TEST(Csv, rejects_wrong_number_of_fields) {
  EXPECT_EQ(file_error("bad_field_count.csv"),
            data_file("bad_field_count.csv") + ":3: expected 3 fields as in the header, found 5");
}

TEST(Csv, rejects_a_nul_byte_naming_its_place) {
  EXPECT_EQ(file_error("bad_nul.csv"),
            data_file("bad_nul.csv") +
                ":3: stray byte 0x00 at character 11 (not text: a binary or damaged file?)");
}

TEST(Csv, rejects_an_empty_file) {
  EXPECT_EQ(file_error("bad_empty.csv"),
            data_file("bad_empty.csv") + ":1: empty file (no header line)");
  EXPECT_EQ(
      file_error("bad_only_comments.csv"),
      data_file("bad_only_comments.csv") + ":3: no header line (only comments and blank lines)");
}

TEST(Csv, rejects_an_unterminated_quote_at_the_line_it_opened) {
  EXPECT_EQ(file_error("bad_unterminated_quote.csv"),
            data_file("bad_unterminated_quote.csv") +
                ":2: unterminated quoted field (missing closing '\"')");
}

TEST(Csv, rejects_a_truncated_gzip_file) {
  EXPECT_EQ(file_error("bad_truncated.csv.gz")
                .rfind(data_file("bad_truncated.csv.gz") + ": read failed: ", 0),
            0u)
      << file_error("bad_truncated.csv.gz");
}

TEST(Csv, rejects_a_missing_file) {
  EXPECT_EQ(file_error("no_such_file.csv"),
            data_file("no_such_file.csv") + ": cannot open: No such file or directory");
}

TEST(Csv, rejects_each_bad_field_naming_line_and_value) {
  const std::string h = "action,address,size\n";
  const std::string hx = "action,address,size,device,kind,alignment,segment,label\n";
  const std::pair<std::string, std::string> cases[] = {
      {h + "alloc,,16\n", "t.csv:2: alloc without an address"},
      {h + "free,,\n", "t.csv:2: free without an address"},
      {h + "alloc,0x10,\n", "t.csv:2: alloc without a size"},
      {h + ",0x10,1\n", "t.csv:2: missing action (expected alloc, free, run_begin, run_end, mark)"},
      {h + "alloc,1,0x10\n", "t.csv:2: bad number '0x10' in column size (expected digits)"},
      {h + "alloc,1,+5\n", "t.csv:2: bad number '+5' in column size (expected digits)"},
      {h + "alloc,1,1 2\n", "t.csv:2: bad number '1 2' in column size (expected digits)"},
      {h + "alloc,0x,1\n",
       "t.csv:2: bad number '0x' in column address (expected hex digits after 0x)"},
      {hx + "alloc,1,1,gpu0,,,,\n", "t.csv:2: bad device 'gpu0' (expected cpu, cuda:N, -1 or N)"},
      {hx + "alloc,1,1,-2,,,,\n", "t.csv:2: bad device '-2' (expected cpu, cuda:N, -1 or N)"},
      {hx + "alloc,1,1,,vram,,,\n",
       "t.csv:2: unknown kind 'vram' (expected host, device, managed, pinned, mapped)"},
      {hx + "alloc,1,1,,,24,,\n", "t.csv:2: alignment 24 is not a power of two"},
      {hx + "alloc,1,1,,,,yes,\n", "t.csv:2: bad segment flag 'yes' (expected 0 or 1)"},
      {hx + "mark,,,,,,,say \"hi\"\n",
       "t.csv:2: stray '\"' in unquoted field 8 (quote the whole field and double inner quotes)"},
      {hx + "mark,,,,,,,\"a\"b\n", "t.csv:2: unexpected text after the closing quote of field 8"},
      {h + "alloc,1,1\x7f\n",
       "t.csv:2: stray byte 0x7F at character 10 (not text: a binary or damaged file?)"},
      {"action,address,size,realloc_in_place\nalloc,1,1,2\n",
       "t.csv:2: bad realloc_in_place flag '2' (expected 0 or 1)"},
      {"action,address,size,realloc_in_place\nfree,1,,1\n",
       "t.csv:2: a free marked realloc_in_place (only an alloc can be)"},
      {"action,address,size,size\n", "t.csv:1: column 'size' appears twice in the header"},
      {"100,1,alloc,0x10,16\n",
       "t.csv:1: missing required column(s) 'action', 'address', 'size' (the first non-comment "
       "line must be a header naming action, address and size; this one looks like data)"},
  };
  for (const auto& [text, expected] : cases) EXPECT_EQ(text_error(text), expected) << text;
}

}  // namespace
}  // namespace alloclab
