// The pickle reader on its own: every plain value Python pickles in protocols 2 to 5, the opcodes
// Python's pickler seldom writes, and damaged or hostile pickles (code, lengths, memo, nesting).
// The *.pickle files are made by tests/data/interchange/make_snapshot_pickles.py.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <sstream>

#include "format/interchange/pickle.hpp"
#include "interchange_test_util.hpp"

namespace alloclab::interchange_detail {
namespace {

using test::data_file;
using test::file_text;
using test::input_error;
using Kind = PlainTree::Kind;

PickleDocument decode(const std::string& bytes, bool size_known = true) {
  std::istringstream in(bytes);
  return read_pickle(in, "p.pickle",
                     size_known ? std::optional<std::uint64_t>(bytes.size()) : std::nullopt);
}

std::string decode_error(const std::string& bytes, bool size_known = true) {
  return input_error([&] { decode(bytes, size_known); });
}

nlohmann::json json_of(const PickleDocument& d) {
  const auto value = d.tree.to_json(d.root);
  EXPECT_TRUE(value.has_value());
  return value.value_or(nlohmann::json());
}

// Bytes from a list of byte values and text pieces.
std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out += static_cast<char>(v);
  return out;
}

const std::string proto2 = bytes({0x80, 2});
const std::string proto4 = bytes({0x80, 4});

TEST(Pickle, reads_every_plain_value_of_protocols_2_to_5) {
  for (int protocol = 2; protocol <= 5; ++protocol) {
    SCOPED_TRACE(protocol);
    const std::string stem = data_file("every_value.p" + std::to_string(protocol));
    const PickleDocument d = decode(file_text(stem + ".pickle"));
    EXPECT_FALSE(d.cut.has_value());
    EXPECT_EQ(json_of(d), nlohmann::json::parse(file_text(stem + ".json")));
  }
}

TEST(Pickle, keeps_the_integer_kinds_apart) {
  const PickleDocument d = decode(file_text(data_file("every_value.p2.pickle")));
  const auto ints = d.tree.find(d.root, "ints");
  ASSERT_TRUE(ints.has_value());
  const auto items = d.tree.items(*ints);
  ASSERT_EQ(items.size(), 17u);
  EXPECT_EQ(d.tree.integer_of(items[6]), -1);
  EXPECT_EQ(d.tree.integer_of(items[14]), INT64_MIN);
  EXPECT_EQ(d.tree.kind(items[13]), Kind::integer);  // 2^63 - 1
  EXPECT_EQ(d.tree.kind(items[15]), Kind::unsigned_integer);
  EXPECT_EQ(d.tree.unsigned_of(items[16]), UINT64_MAX);
}

// Opcodes Python's pickler writes only for huge values or never, but which are plain data.
TEST(Pickle, reads_the_plain_opcodes_python_seldom_writes) {
  const std::string pickle =
      proto4 + bytes({'(', 0x8d, 2, 0, 0, 0, 0, 0, 0, 0}) + "hi" +              // MARK, BINUNICODE8
      bytes({0x8e, 1, 0, 0, 0, 0, 0, 0, 0}) + "z" +                             // BINBYTES8
      bytes({0x8b, 2, 0, 0, 0, 0x00, 0x80}) +                                   // LONG4 -32768
      bytes({0x8a, 9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00}) +  // 2^64 - 1
      // -2 in 12 bytes, more than it needs
      bytes({0x8a, 12, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) +
      bytes({0x8a, 0,                      // LONG1 0
             'K',  7,   '2', '0',          // 7, DUP, POP
             'K',  8,   '(', 'K', 9, '1',  // 8, MARK 9 POP_MARK
             '(',  'K', 1,   'K', 2, 'd',  // DICT {1: 2}
             '(',  'K', 3,   't',          // TUPLE (3,)
             'l',  '.'});                  // LIST
  const PickleDocument d = decode(pickle);
  EXPECT_EQ(json_of(d), nlohmann::json::parse(
                            R"(["hi", "z", -32768, 18446744073709551615, -2, 0, 7, 8,
                                {"1": 2}, [3]])"));
  EXPECT_EQ(d.tree.kind(d.tree.items(d.root)[1]), Kind::bytes);
  EXPECT_EQ(d.tree.kind(d.tree.items(d.root)[9]), Kind::tuple);
}

TEST(Pickle, a_container_referenced_twice_is_one_value) {
  // L = [1]; [L, L]: Python's pickler writes the second L as BINGET of the first.
  const std::string pickle = proto2 + bytes({']', '(', ']', 'q', 0, 'K', 1, 'a', 'h', 0, 'e', '.'});
  const PickleDocument d = decode(pickle);
  const auto items = d.tree.items(d.root);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0], items[1]);
  EXPECT_EQ(json_of(d), nlohmann::json::parse("[[1], [1]]"));
}

TEST(Pickle, refuses_a_pickle_that_would_run_code) {
  // {"segments": [], "device_traces": [[{"action": os.system("echo ...")}]]}: protocol 2 names
  // the function with GLOBAL, protocol 4 with STACK_GLOBAL; both then call it with REDUCE.
  EXPECT_EQ(input_error([] { decode(file_text(data_file("hostile_os_system.p2.pickle"))); }),
            "p.pickle: byte 66: opcode GLOBAL (0x63) would import or call Python code; a memory "
            "snapshot is plain data, and alloclab runs nothing from a pickle");
  EXPECT_EQ(input_error([] { decode(file_text(data_file("hostile_os_system.p4.pickle"))); }),
            "p.pickle: byte 75: opcode STACK_GLOBAL (0x93) would import or call Python code; a "
            "memory snapshot is plain data, and alloclab runs nothing from a pickle");
  for (const int op :
       {int{'R'}, int{'b'}, int{'i'}, int{'o'}, 0x81, 0x92, int{'P'}, int{'Q'}, 0x82, 0x83, 0x84}) {
    const std::string message = decode_error(proto2 + bytes({'N', op}));
    EXPECT_NE(message.find("p.pickle: byte 3: opcode "), std::string::npos) << message;
    EXPECT_NE(message.find("would import or call Python code"), std::string::npos) << message;
  }
}

TEST(Pickle, refuses_opcodes_it_does_not_read_with_their_byte) {
  EXPECT_EQ(decode_error(proto2 + bytes({'N', 0xff})),
            "p.pickle: byte 3: opcode 0xFF is not a pickle opcode alloclab reads");
  EXPECT_EQ(decode_error(proto2 + bytes({'I'}) + "12\n."),
            "p.pickle: byte 2: opcode INT (0x49) is not one of plain data in pickle protocols 2 "
            "to 5");
  EXPECT_EQ(decode_error(proto2 + bytes({0x97})),
            "p.pickle: byte 2: opcode NEXT_BUFFER (0x97) is not one of plain data in pickle "
            "protocols 2 to 5");
}

TEST(Pickle, refuses_what_is_not_a_pickle_of_protocol_2_to_5) {
  EXPECT_EQ(decode_error(""), "p.pickle: byte 0: an empty file, not a pickle");
  EXPECT_EQ(decode_error("(lp0\n."),
            "p.pickle: byte 0: not a pickle of protocol 2 or later (the first byte is not 0x80, "
            "PROTO)");
  EXPECT_EQ(decode_error(bytes({0x80, 6, 'N', '.'})),
            "p.pickle: byte 0: pickle protocol 6; alloclab reads protocols 2 to 5");
}

TEST(Pickle, refuses_memo_references_to_entries_never_stored) {
  EXPECT_EQ(decode_error(proto2 + bytes({'h', 5, '.'})),
            "p.pickle: byte 2: memo entry 5 was never stored (the memo holds 0)");
  EXPECT_EQ(decode_error(proto2 + bytes({'N', 'q', 0, 'j', 1, 0, 0, 0, '.'})),
            "p.pickle: byte 5: memo entry 1 was never stored (the memo holds 1)");
}

TEST(Pickle, a_memo_index_far_ahead_costs_no_table) {
  // LONG_BINPUT 4294967295: a table up to it would be 16 GiB.
  const PickleDocument d = decode(
      proto2 + bytes({'K', 3, 'r', 0xff, 0xff, 0xff, 0xff, '0', 'j', 0xff, 0xff, 0xff, 0xff, '.'}));
  EXPECT_EQ(d.tree.integer_of(d.root), 3);
}

TEST(Pickle, refuses_stack_misuse_naming_the_opcode) {
  EXPECT_EQ(decode_error(proto2 + bytes({'a'})),
            "p.pickle: byte 2: APPEND finds no value on the stack");
  EXPECT_EQ(decode_error(proto2 + bytes({'N', 'N', 'a'})),
            "p.pickle: byte 4: APPEND into None, not a list");
  EXPECT_EQ(decode_error(proto2 + bytes({'e'})),
            "p.pickle: byte 2: APPENDS without a MARK before it");
  EXPECT_EQ(decode_error(proto2 + bytes({'}', '(', 'N', 'u'})),
            "p.pickle: byte 5: SETITEMS with a key that has no value");
  EXPECT_EQ(decode_error(proto2 + bytes({'}', ']', 'N', 's'})),
            "p.pickle: byte 5: SETITEM with a list as a key (not hashable)");
  EXPECT_EQ(decode_error(proto2 + bytes({'N', 'N', '.'})),
            "p.pickle: byte 4: STOP with 2 values and 0 MARKs on the stack, not one value");
  // Values below a MARK are out of reach until it is gone.
  EXPECT_EQ(decode_error(proto2 + bytes({']', '(', 'a'})),
            "p.pickle: byte 4: APPEND finds no value on the stack");
}

TEST(Pickle, refuses_integers_beyond_64_bits) {
  EXPECT_EQ(decode_error(proto2 + bytes({0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0, 1, '.'})),
            "p.pickle: byte 2: an integer beyond 64 bits (9 bytes)");
  EXPECT_EQ(decode_error(proto2 + bytes({0x8a, 9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
                                         0xff, '.'})),
            "p.pickle: byte 2: an integer beyond 64 bits (9 bytes)");  // -2^63 - 1
  EXPECT_EQ(decode_error(proto2 + bytes({0x8b, 0, 0, 0, 0x40})),
            "p.pickle: byte 2: an integer of 1073741824 bytes, beyond 64 bits");
  EXPECT_EQ(decode_error(proto2 + bytes({0x8b, 0xff, 0xff, 0xff, 0xff})),
            "p.pickle: byte 2: LONG4 with a negative length -1");
}

std::uint64_t peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::uint64_t>(usage.ru_maxrss);
}

// A length field says how many bytes follow; a hostile one says terabytes. Nothing is allocated
// for it: with the input's size known it is checked first, and from a stream of unknown size the
// string grows only with bytes that actually arrive.
TEST(Pickle, a_hostile_length_allocates_nothing_for_it) {
  const std::uint64_t before = peak_rss_kib();
  const std::string lengths[] = {
      bytes({0x8d, 0, 0, 0, 0, 0, 0, 0, 0x40}),                       // BINUNICODE8 2^62
      bytes({0x8e, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}),  // BINBYTES8 2^64 - 1
      bytes({0x96, 0, 0, 0, 0, 4, 0, 0, 0}),                          // BYTEARRAY8 16 GiB
      bytes({'X', 0xff, 0xff, 0xff, 0xff}),                           // BINUNICODE 4 GiB - 1
      bytes({'B', 0xff, 0xff, 0xff, 0x7f}),                           // BINBYTES 2 GiB - 1
  };
  for (const std::string& field : lengths) {
    for (const bool size_known : {true, false}) {
      SCOPED_TRACE(testing::Message() << "opcode " << int(static_cast<unsigned char>(field[0]))
                                      << (size_known ? ", size known" : ", size unknown"));
      const std::string pickle = proto4 + bytes({']'}) + field + "only a few bytes";
      try {
        // Past the end of the input: a cut at the opcode, the list before it kept.
        const PickleDocument d = decode(pickle, size_known);
        ASSERT_TRUE(d.cut.has_value());
        EXPECT_EQ(d.cut->offset, 3u);
      } catch (const InputError& e) {
        // Beyond what a pickle may hold at all: refused at the opcode.
        EXPECT_NE(std::string(e.what()).find("p.pickle: byte 3: "), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("more than a pickle of at most 4 GiB holds"),
                  std::string::npos)
            << e.what();
      }
    }
  }
  EXPECT_LT(peak_rss_kib() - before, 64u * 1024) << "KiB more at peak";
}

TEST(Pickle, a_string_past_the_end_is_a_cut_not_an_allocation) {
  const std::string pickle = proto4 + bytes({']', 'X', 0xff, 0xff, 0xff, 0x0f}) + "abc";
  for (const bool size_known : {true, false}) {
    const PickleDocument d = decode(pickle, size_known);
    ASSERT_TRUE(d.cut.has_value());
    EXPECT_EQ(d.cut->offset, 3u);
    EXPECT_EQ(d.cut->what, "the input ends inside a str of 268435455 bytes");
    EXPECT_EQ(d.tree.kind(d.root), Kind::list);
    EXPECT_TRUE(d.tree.is_cut(d.root));
  }
}

TEST(Pickle, nesting_is_bounded) {
  std::string marks = proto2;
  for (int i = 0; i < 2000; ++i) marks += '(';
  EXPECT_EQ(decode_error(marks),
            "p.pickle: byte " + std::to_string(2 + max_pickle_marks) + ": more than " +
                std::to_string(max_pickle_marks) +
                " nested MARKs: nested far more deeply than a memory snapshot");
  // Lists in lists without MARK (one APPEND each): read, but no walk of the tree goes deeper
  // than its bound.
  std::string chain = proto2;
  for (int i = 0; i < 100000; ++i) chain += ']';
  for (int i = 1; i < 100000; ++i) chain += 'a';
  chain += '.';
  const PickleDocument d = decode(chain);
  EXPECT_FALSE(d.tree.to_json(d.root).has_value());
  EXPECT_EQ(d.tree.describe(d.root), "(a value too large or too deeply nested to show)");
}

TEST(Pickle, a_list_that_holds_itself_is_read_and_walked_within_bounds) {
  // L = []; L.append(L)
  const PickleDocument d = decode(proto2 + bytes({']', 'q', 0, 'h', 0, 'a', '.'}));
  EXPECT_EQ(d.tree.items(d.root)[0], d.root);
  EXPECT_FALSE(d.tree.to_json(d.root).has_value());
}

// A value shared 2^k ways is 2^k values once written out: the walk stops at its bound.
TEST(Pickle, sharing_that_doubles_at_each_level_is_walked_within_bounds) {
  std::string pickle = proto2 + bytes({'N'});
  for (int level = 0; level < 64; ++level) pickle += bytes({'2', 0x86});  // DUP, TUPLE2
  pickle += '.';
  const PickleDocument d = decode(pickle);
  EXPECT_FALSE(d.tree.to_json(d.root, 100, 100000).has_value());
}

TEST(Pickle, text_that_is_not_utf8_is_replaced_and_bytes_are_kept) {
  // Python writes lone surrogates (surrogatepass) into str: not UTF-8.
  const PickleDocument d =
      decode(proto4 + bytes({'(', 0x8c, 4, 'a', 0xed, 0xa0, 0x80, 'C', 2, 0xff, 'b', 'l', '.'}));
  EXPECT_EQ(d.tree.text_of(d.tree.items(d.root)[0]), "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(d.tree.text_of(d.tree.items(d.root)[1]),
            "\xff"
            "b");
  EXPECT_EQ(json_of(d).dump(),
            "[\"a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\",\"\xEF\xBF\xBD"
            "b\"]");
}

TEST(Pickle, an_input_cut_before_any_value_is_an_error) {
  EXPECT_EQ(decode_error(bytes({0x80})),
            "p.pickle: byte 0: the input ends inside the PROTO opcode, before the pickle holds "
            "any value (the file is cut short?)");
  EXPECT_EQ(decode_error(proto4 + bytes({0x95, 1, 2})),
            "p.pickle: byte 2: the input ends inside the FRAME opcode, before the pickle holds "
            "any value (the file is cut short?)");
}

TEST(Pickle, the_input_bound_stops_an_endless_stream) {
  // An endless list of Nones: refused at the bound, from a stream of unknown size.
  std::string pickle = proto2 + bytes({']', '('}) + std::string(5000, 'N');
  std::istringstream in(pickle);
  const std::string message = input_error([&] { read_pickle(in, "p.pickle", std::nullopt, 4096); });
  EXPECT_EQ(message,
            "p.pickle: byte 4096: more than 4 KiB of pickle, more than any memory "
            "snapshot holds; not one pickle?");
}

}  // namespace
}  // namespace alloclab::interchange_detail
