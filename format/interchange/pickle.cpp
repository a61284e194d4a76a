// The pickle stack machine, restricted to plain data (see pickle.hpp for what it refuses and why).
#include "pickle.hpp"

#include <array>
#include <bit>
#include <cstdio>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "alloclab/format/error.hpp"
#include "alloclab/format/units.hpp"
#include "text_io.hpp"

namespace alloclab::interchange_detail {
namespace {

using Id = PlainTree::Id;
using Kind = PlainTree::Kind;

// The opcodes, named as in Python's pickletools.
enum Op : std::uint8_t {
  MARK = '(',
  STOP = '.',
  POP = '0',
  POP_MARK = '1',
  DUP = '2',
  BININT = 'J',
  BININT1 = 'K',
  BININT2 = 'M',
  NONE = 'N',
  BINUNICODE = 'X',
  APPEND = 'a',
  DICT = 'd',
  EMPTY_DICT = '}',
  APPENDS = 'e',
  BINGET = 'h',
  LONG_BINGET = 'j',
  LIST = 'l',
  EMPTY_LIST = ']',
  BINPUT = 'q',
  LONG_BINPUT = 'r',
  SETITEM = 's',
  TUPLE = 't',
  EMPTY_TUPLE = ')',
  SETITEMS = 'u',
  BINFLOAT = 'G',
  PROTO = 0x80,
  TUPLE1 = 0x85,
  TUPLE2 = 0x86,
  TUPLE3 = 0x87,
  NEWTRUE = 0x88,
  NEWFALSE = 0x89,
  LONG1 = 0x8a,
  LONG4 = 0x8b,
  BINBYTES = 'B',
  SHORT_BINBYTES = 'C',
  SHORT_BINUNICODE = 0x8c,
  BINUNICODE8 = 0x8d,
  BINBYTES8 = 0x8e,
  EMPTY_SET = 0x8f,
  ADDITEMS = 0x90,
  FROZENSET = 0x91,
  MEMOIZE = 0x94,
  FRAME = 0x95,
  BYTEARRAY8 = 0x96,
};

// Opcodes a plain-data pickle of protocol 2 to 5 never holds, by name for the message. Those that
// import, call or build objects are the way a pickle runs code.
std::string refused_opcode(std::uint8_t op) {
  struct Named {
    std::uint8_t op;
    const char* name;
    bool runs_code;
  };
  static constexpr Named named[] = {
      {'c', "GLOBAL", true},    {0x93, "STACK_GLOBAL", true}, {'R', "REDUCE", true},
      {'b', "BUILD", true},     {'i', "INST", true},          {'o', "OBJ", true},
      {0x81, "NEWOBJ", true},   {0x92, "NEWOBJ_EX", true},    {'P', "PERSID", true},
      {'Q', "BINPERSID", true}, {0x82, "EXT1", true},         {0x83, "EXT2", true},
      {0x84, "EXT4", true},     {0x97, "NEXT_BUFFER", false}, {0x98, "READONLY_BUFFER", false},
      {'I', "INT", false},      {'L', "LONG", false},         {'F', "FLOAT", false},
      {'S', "STRING", false},   {'V', "UNICODE", false},      {'g', "GET", false},
      {'p', "PUT", false},      {'T', "BINSTRING", false},    {'U', "SHORT_BINSTRING", false},
  };
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", op);
  for (const Named& n : named) {
    if (n.op != op) continue;
    if (n.runs_code)
      return std::string("opcode ") + n.name + " (" + hex +
             ") would import or call Python code; a memory snapshot is plain data, and alloclab "
             "runs nothing from a pickle";
    return std::string("opcode ") + n.name + " (" + hex +
           ") is not one of plain data in pickle protocols 2 to 5";
  }
  return std::string("opcode ") + hex + " is not a pickle opcode alloclab reads";
}

std::string kind_name(Kind kind) {
  switch (kind) {
    case Kind::null:
      return "None";
    case Kind::boolean:
      return "a bool";
    case Kind::integer:
    case Kind::unsigned_integer:
      return "an int";
    case Kind::real:
      return "a float";
    case Kind::text:
      return "a str";
    case Kind::bytes:
      return "bytes";
    case Kind::list:
      return "a list";
    case Kind::tuple:
      return "a tuple";
    case Kind::dict:
      return "a dict";
  }
  return "a value";
}

// Thrown when the input ends inside an opcode: the document is then closed where it stands.
struct Ended {
  std::string what;
};

// The input, read a piece at a time: nothing is allocated for a length the input does not
// actually hold.
class Input {
 public:
  Input(std::istream& in, const std::string& name, std::optional<std::uint64_t> size,
        std::uint64_t max_bytes)
      : in_(in), name_(name), size_(size), max_bytes_(max_bytes), buffer_(1 << 16) {}

  std::uint64_t offset() const { return offset_; }
  std::uint64_t max_bytes() const { return max_bytes_; }

  // False at the end of the input.
  bool next(std::uint8_t& byte) {
    if (pos_ == end_ && !refill()) return false;
    byte = static_cast<std::uint8_t>(buffer_[pos_++]);
    ++offset_;
    return true;
  }

  void read(void* out, std::size_t n, const char* what) {
    auto* to = static_cast<char*>(out);
    while (n > 0) {
      if (pos_ == end_ && !refill()) throw Ended{std::string("the input ends inside ") + what};
      const std::size_t take = std::min(n, end_ - pos_);
      std::memcpy(to, buffer_.data() + pos_, take);
      pos_ += take;
      offset_ += take;
      to += take;
      n -= take;
    }
  }

  // `n` bytes as a string. A length past the end of an input of known size is found before
  // anything is allocated; otherwise the string grows only with bytes actually read.
  std::string read_string(std::uint64_t n, const char* what) {
    const auto ended = [&] {
      return Ended{"the input ends inside " + std::string(what) + " of " + std::to_string(n) +
                   " bytes"};
    };
    if (size_ && n > *size_ - std::min(*size_, offset_)) throw ended();
    std::string out;
    if (size_) out.reserve(n);
    while (out.size() < n) {
      if (pos_ == end_ && !refill()) throw ended();
      const std::size_t take = std::min<std::uint64_t>(n - out.size(), end_ - pos_);
      out.append(buffer_.data() + pos_, take);
      pos_ += take;
      offset_ += take;
    }
    return out;
  }

 private:
  // Never reads past the bound, so that an endless stream is refused right at it.
  bool refill() {
    if (offset_ >= max_bytes_) {
      if (in_.peek() == std::char_traits<char>::eof()) return false;
      throw InputError(name_ + ": byte " + std::to_string(offset_) + ": more than " +
                       exact_bytes(max_bytes_) +
                       " of pickle, more than any memory snapshot holds; not one pickle?");
    }
    const std::uint64_t room = max_bytes_ - offset_;
    in_.read(buffer_.data(),
             static_cast<std::streamsize>(std::min<std::uint64_t>(buffer_.size(), room)));
    pos_ = 0;
    end_ = static_cast<std::size_t>(in_.gcount());
    return end_ > 0;
  }

  std::istream& in_;
  const std::string& name_;
  std::optional<std::uint64_t> size_;
  std::uint64_t max_bytes_;
  std::vector<char> buffer_;
  std::size_t pos_ = 0, end_ = 0;
  std::uint64_t offset_ = 0;
};

class Machine {
 public:
  Machine(Input& in, const std::string& name) : in_(in), name_(name) {}

  PickleDocument run() {
    try {
      std::uint8_t op = 0;
      if (!in_.next(op)) fail("an empty file, not a pickle");
      if (op != PROTO)
        fail("not a pickle of protocol 2 or later (the first byte is not 0x80, PROTO)");
      protocol();
      for (;;) {
        op_offset_ = in_.offset();
        if (!in_.next(op)) throw Ended{"the input ends before the pickle's STOP opcode"};
        if (op == STOP) return finish();
        step(op);
      }
    } catch (const Ended& ended) {
      return close_after_cut(ended.what);
    } catch (const PlainTree::TooLarge& e) {
      fail(std::string(e.what()) + ": more than any memory snapshot holds");
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(name_ + ": byte " + std::to_string(op_offset_) + ": " + what);
  }

  template <typename T>
  T little_endian(const char* what) {
    std::array<std::uint8_t, sizeof(T)> raw{};
    in_.read(raw.data(), raw.size(), what);
    std::uint64_t value = 0;
    for (std::size_t i = raw.size(); i-- > 0;) value = (value << 8) | raw[i];
    return static_cast<T>(value);
  }

  void protocol() {
    const auto version = little_endian<std::uint8_t>("the PROTO opcode");
    if (version < 2 || version > 5)
      fail("pickle protocol " + std::to_string(version) + "; alloclab reads protocols 2 to 5");
  }

  // The values above the innermost MARK (Python's unpickler sees only those).
  std::size_t frame_base() const { return marks_.empty() ? 0 : marks_.back(); }
  std::size_t frame_size() const { return stack_.size() - frame_base(); }

  Id pop(const char* opcode) {
    if (frame_size() == 0) fail(std::string(opcode) + " finds no value on the stack");
    const Id id = stack_.back();
    stack_.pop_back();
    return id;
  }
  Id top(const char* opcode) const {
    if (frame_size() == 0) fail(std::string(opcode) + " finds no value on the stack");
    return stack_.back();
  }
  // The values pushed since the innermost MARK, which is removed.
  std::vector<Id> pop_mark(const char* opcode) {
    if (marks_.empty()) fail(std::string(opcode) + " without a MARK before it");
    const std::size_t base = marks_.back();
    marks_.pop_back();
    std::vector<Id> items(stack_.begin() + static_cast<std::ptrdiff_t>(base), stack_.end());
    stack_.resize(base);
    return items;
  }
  void push(Id id) { stack_.push_back(id); }

  Id container(const char* opcode, Kind want) const {
    const Id target = top(opcode);
    if (tree_.kind(target) != want)
      fail(std::string(opcode) + " into " + kind_name(tree_.kind(target)) + ", not " +
           kind_name(want));
    return target;
  }

  void set_items(const char* opcode, const std::vector<Id>& pairs) {
    if (pairs.size() % 2 != 0) fail(std::string(opcode) + " with a key that has no value");
    for (std::size_t i = 0; i < pairs.size(); i += 2) {
      const Kind key = tree_.kind(pairs[i]);
      if (key == Kind::list || key == Kind::dict)
        fail(std::string(opcode) + " with " + kind_name(key) + " as a key (not hashable)");
    }
  }

  // Picklers number memo entries 0, 1, 2, ...: those go in a table. An index ahead of them (a
  // hostile LONG_BINPUT 4294967295) is kept aside, so that it costs no table up to it.
  std::size_t memo_size() const { return memo_.size() + sparse_memo_.size(); }
  void memo_put(std::uint64_t index, Id id) {
    if (index < memo_.size()) {
      memo_[index] = id;
    } else if (index == memo_.size()) {
      memo_.push_back(id);
      sparse_memo_.erase(index);
      for (auto it = sparse_memo_.find(memo_.size()); it != sparse_memo_.end();
           it = sparse_memo_.find(memo_.size())) {
        memo_.push_back(it->second);
        sparse_memo_.erase(it);
      }
    } else {
      sparse_memo_[index] = id;
    }
  }
  Id memo_get(std::uint64_t index) const {
    if (index < memo_.size()) return memo_[index];
    if (const auto it = sparse_memo_.find(index); it != sparse_memo_.end()) return it->second;
    fail("memo entry " + std::to_string(index) + " was never stored (the memo holds " +
         std::to_string(memo_size()) + ")");
  }

  // `n` bytes of text or bytes. A length beyond what a pickle may hold at all is refused here,
  // at its opcode; one past the end of the input is a cut (Input::read_string).
  std::string string_of(std::uint64_t n, const char* what) {
    if (n > in_.max_bytes() - std::min(in_.max_bytes(), in_.offset()))
      fail(std::string(what) + " of " + std::to_string(n) +
           " bytes, more than a pickle of at most " + exact_bytes(in_.max_bytes()) + " holds");
    return in_.read_string(n, what);
  }

  // A Python int in two's complement, little-endian, as LONG1 and LONG4 store it: 64 bits at
  // most (int64 or, when not negative, uint64).
  Id long_integer(std::uint64_t n) {
    // Python writes the fewest bytes that hold the value: 9 at most for 64 bits.
    if (n > 64) fail("an integer of " + std::to_string(n) + " bytes, beyond 64 bits");
    const std::string bytes = string_of(n, "an integer");
    if (n == 0) return tree_.integer(0);
    const auto at = [&](std::size_t i) { return static_cast<std::uint8_t>(bytes[i]); };
    const bool negative = (at(n - 1) & 0x80) != 0;
    const std::uint8_t extension = negative ? 0xFF : 0x00;
    // Drop sign-extension bytes the value does not need.
    std::size_t used = n;
    while (used > 1 && at(used - 1) == extension && ((at(used - 2) & 0x80) != 0) == negative)
      --used;
    const bool fits = negative ? used <= 8 : used <= 8 || (used == 9 && at(8) == 0);
    if (!fits) fail("an integer beyond 64 bits (" + std::to_string(n) + " bytes)");
    std::uint64_t value = negative ? ~std::uint64_t{0} : 0;
    for (std::size_t i = std::min<std::size_t>(used, 8); i-- > 0;) value = (value << 8) | at(i);
    if (negative && used < 8) {
      // Sign-extend from `used` bytes.
      value |= ~std::uint64_t{0} << (8 * used);
    }
    return negative ? tree_.integer(static_cast<std::int64_t>(value))
                    : tree_.unsigned_integer(value);
  }

  void step(std::uint8_t op) {
    switch (op) {
      case PROTO:
        return protocol();
      case FRAME:
        // Framing only groups opcodes for faster reading; the opcodes read the same without it.
        (void)little_endian<std::uint64_t>("the FRAME opcode");
        return;
      case MARK:
        if (marks_.size() >= max_pickle_marks)
          fail("more than " + std::to_string(max_pickle_marks) +
               " nested MARKs: nested far more deeply than a memory snapshot");
        marks_.push_back(stack_.size());
        return;
      case POP:
        // As Python's: with nothing above the innermost MARK, POP removes the MARK.
        if (frame_size() == 0 && !marks_.empty())
          marks_.pop_back();
        else
          (void)pop("POP");
        return;
      case POP_MARK:
        (void)pop_mark("POP_MARK");
        return;
      case DUP:
        return push(top("DUP"));
      case NONE:
        return push(tree_.null());
      case NEWTRUE:
        return push(tree_.boolean(true));
      case NEWFALSE:
        return push(tree_.boolean(false));
      case BININT:
        return push(tree_.integer(little_endian<std::int32_t>("an integer")));
      case BININT1:
        return push(tree_.integer(little_endian<std::uint8_t>("an integer")));
      case BININT2:
        return push(tree_.integer(little_endian<std::uint16_t>("an integer")));
      case LONG1:
        return push(long_integer(little_endian<std::uint8_t>("an integer's length")));
      case LONG4: {
        const auto n = little_endian<std::int32_t>("an integer's length");
        if (n < 0) fail("LONG4 with a negative length " + std::to_string(n));
        return push(long_integer(static_cast<std::uint64_t>(n)));
      }
      case BINFLOAT: {
        std::array<std::uint8_t, 8> raw{};
        in_.read(raw.data(), raw.size(), "a float");
        std::uint64_t bits = 0;
        for (std::uint8_t b : raw) bits = (bits << 8) | b;  // big-endian, unlike the integers
        return push(tree_.real(std::bit_cast<double>(bits)));
      }
      case SHORT_BINUNICODE:
        return push(tree_.text(string_of(little_endian<std::uint8_t>("a length"), "a str")));
      case BINUNICODE:
        return push(tree_.text(string_of(little_endian<std::uint32_t>("a length"), "a str")));
      case BINUNICODE8:
        return push(tree_.text(string_of(little_endian<std::uint64_t>("a length"), "a str")));
      case SHORT_BINBYTES:
        return push(
            tree_.bytes(string_of(little_endian<std::uint8_t>("a length"), "a bytes value")));
      case BINBYTES:
        return push(
            tree_.bytes(string_of(little_endian<std::uint32_t>("a length"), "a bytes value")));
      case BINBYTES8:
      case BYTEARRAY8:
        return push(
            tree_.bytes(string_of(little_endian<std::uint64_t>("a length"), "a bytes value")));
      case EMPTY_LIST:
      case EMPTY_SET:  // a set is read as the list of its items
        return push(tree_.list());
      case EMPTY_DICT:
        return push(tree_.dict());
      case EMPTY_TUPLE:
        return push(tree_.tuple({}));
      case TUPLE1:
      case TUPLE2:
      case TUPLE3: {
        const std::size_t n = op - TUPLE1 + 1u;
        if (frame_size() < n) fail("TUPLE" + std::to_string(n) + " finds too few values");
        const std::vector<Id> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
        stack_.resize(stack_.size() - n);
        return push(tree_.tuple(items));
      }
      case TUPLE:
        return push(tree_.tuple(pop_mark("TUPLE")));
      case LIST:
      case FROZENSET: {
        const Id list = tree_.list();
        tree_.extend(list, pop_mark(op == LIST ? "LIST" : "FROZENSET"));
        return push(list);
      }
      case DICT: {
        std::vector<Id> pairs = pop_mark("DICT");
        set_items("DICT", pairs);
        const Id dict = tree_.dict();
        tree_.extend(dict, std::move(pairs));
        return push(dict);
      }
      case APPEND: {
        const Id item = pop("APPEND");
        const Id list = container("APPEND", Kind::list);
        tree_.extend(list, std::span<const Id>(&item, 1));
        return;
      }
      case APPENDS:
      case ADDITEMS: {
        const char* name = op == APPENDS ? "APPENDS" : "ADDITEMS";
        std::vector<Id> items = pop_mark(name);
        tree_.extend(container(name, Kind::list), std::move(items));
        return;
      }
      case SETITEM: {
        const Id value = pop("SETITEM");
        const Id key = pop("SETITEM");
        const std::vector<Id> pair = {key, value};
        set_items("SETITEM", pair);
        tree_.extend(container("SETITEM", Kind::dict), pair);
        return;
      }
      case SETITEMS: {
        std::vector<Id> pairs = pop_mark("SETITEMS");
        set_items("SETITEMS", pairs);
        tree_.extend(container("SETITEMS", Kind::dict), std::move(pairs));
        return;
      }
      case MEMOIZE:
        return memo_put(memo_size(), top("MEMOIZE"));
      case BINPUT:
        return memo_put(little_endian<std::uint8_t>("a memo index"), top("BINPUT"));
      case LONG_BINPUT:
        return memo_put(little_endian<std::uint32_t>("a memo index"), top("LONG_BINPUT"));
      case BINGET:
        return push(memo_get(little_endian<std::uint8_t>("a memo index")));
      case LONG_BINGET:
        return push(memo_get(little_endian<std::uint32_t>("a memo index")));
      default:
        fail(refused_opcode(op));
    }
  }

  PickleDocument finish() {
    if (!marks_.empty() || stack_.size() != 1)
      fail("STOP with " + std::to_string(stack_.size()) + " values and " +
           std::to_string(marks_.size()) + " MARKs on the stack, not one value");
    PickleDocument document;
    document.root = stack_.front();
    document.tree = std::move(tree_);
    return document;
  }

  // The input ended early. Each MARK's values go to the container below it, as the APPENDS or
  // SETITEMS the cut took would have done, innermost first; below every MARK, the first value is
  // the document and the values after it wait for it the same way. Every container that takes
  // values here is marked cut, so a reader can tell its last items may be missing; so is the last
  // value pushed, if a container: its items may have been about to follow (a pickler writes a
  // container empty, then fills it).
  PickleDocument close_after_cut(const std::string& what) {
    if (!stack_.empty() && tree_.is_container(stack_.back())) tree_.mark_cut(stack_.back());
    while (!marks_.empty()) {
      const std::size_t base = marks_.back();
      marks_.pop_back();
      const std::vector<Id> items(stack_.begin() + static_cast<std::ptrdiff_t>(base), stack_.end());
      stack_.resize(base);
      if (base > frame_base()) attach(stack_[base - 1], items);
    }
    if (stack_.empty())
      throw InputError(name_ + ": byte " + std::to_string(op_offset_) + ": " + what +
                       ", before the pickle holds any value (the file is cut short?)");
    attach(stack_.front(), std::vector<Id>(stack_.begin() + 1, stack_.end()));
    PickleDocument document;
    document.root = stack_.front();
    document.tree = std::move(tree_);
    document.cut = PickleDocument::Cut{op_offset_, what};
    return document;
  }

  void attach(Id owner, const std::vector<Id>& items) {
    const Kind kind = tree_.kind(owner);
    if (kind != Kind::list && kind != Kind::dict) return;  // a tuple the cut left unbuilt
    tree_.mark_cut(owner);
    if (kind == Kind::list) return tree_.extend(owner, items);
    // Key, value pairs. A list or dict where a key would be cannot be a key: it is the item that
    // a cut APPEND would have added to the list before it (one item is pickled without MARK).
    std::optional<Id> last;
    for (std::size_t i = 0; i < items.size();) {
      const Kind k = tree_.kind(items[i]);
      if ((k == Kind::list || k == Kind::dict) && last && tree_.kind(*last) == Kind::list) {
        tree_.mark_cut(*last);
        tree_.extend(*last, std::span<const Id>(&items[i], 1));
        last = items[i++];
      } else if (i + 1 < items.size() && k != Kind::list && k != Kind::dict) {
        tree_.extend(owner, std::span<const Id>(&items[i], 2));
        last = items[i + 1];
        i += 2;
      } else {
        return;  // a key whose value the cut took
      }
    }
  }

  Input& in_;
  const std::string& name_;
  PlainTree tree_;
  std::vector<Id> stack_;
  std::vector<std::size_t> marks_;
  std::vector<Id> memo_;
  std::unordered_map<std::uint64_t, Id> sparse_memo_;
  std::uint64_t op_offset_ = 0;
};

}  // namespace

PickleDocument read_pickle(std::istream& in, const std::string& name,
                           std::optional<std::uint64_t> size, std::uint64_t max_bytes) {
  Input input(in, name, size, max_bytes);
  return Machine(input, name).run();
}

}  // namespace alloclab::interchange_detail
