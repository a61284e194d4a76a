#pragma once
// A PyTorch-shaped snapshot of any size, pickled as Python's pickle module does it with protocol
// 2, for tests at sizes no fixture file should have. make_snapshot_pickles.py's synthetic(n) is
// the same snapshot; the tests check that this writes its committed pickle byte for byte.
#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace alloclab::test {

class Protocol2Writer {
 public:
  Protocol2Writer() { out_ += "\x80\x02"; }
  std::string& bytes() { return out_; }

  void op(char code) { out_ += code; }
  // An object Python's pickler has seen before is written as a reference to its memo entry
  // (true); one it has not is remembered (`put` after its opening opcode).
  bool get(const std::string& identity) {
    const auto it = memo_.find(identity);
    if (it == memo_.end()) return false;
    index(it->second, 'h', 'j');
    return true;
  }
  void put(const std::string& identity) {
    const std::uint32_t n = next_memo_++;
    memo_.emplace(identity, n);
    index(n, 'q', 'r');
  }
  // The memo entry Python's pickler gives an object that is never referred to again: the same
  // bytes as put, without remembering an identity (a snapshot of millions of entries).
  void put_once() { index(next_memo_++, 'q', 'r'); }
  // Equal strings are one object in the snapshots PyTorch writes, hence memoized by content.
  void text(const std::string& s) {
    if (get("str " + s)) return;
    op('X');
    le(s.size(), 4);
    out_ += s;
    put("str " + s);
  }
  // A stack frame dict of a snapshot, one object per `id` (PyTorch shares frames).
  void frame(const std::string& id, const std::string& filename, std::int64_t line,
             const std::string& name) {
    if (get(id)) return;
    op('}');
    put(id);
    op('(');
    text("filename");
    text(filename);
    text("line");
    integer(line);
    text("name");
    text(name);
    op('u');
  }
  // A list of `count` frames, one object per `id` (an allocation and its free share one):
  // `frame_at(k)` writes the k-th.
  template <class FrameAt>
  void frames(const std::string& id, int count, FrameAt frame_at) {
    if (get(id)) return;
    op(']');
    put(id);
    op('(');
    for (int k = 0; k < count; ++k) frame_at(k);
    op('e');
  }
  // {"segments": [], "device_traces": [[ — the history entries come next, then end_history.
  void begin_history() {
    op('}');
    put("root");
    op('(');
    text("segments");
    op(']');
    put("segments");
    text("device_traces");
    op(']');
    put("device_traces");
    op(']');
    put("entries");
  }
  // ]], "allocator_settings": { — the settings' pairs come next, then end_snapshot.
  void end_history() {
    op('a');
    text("allocator_settings");
    op('}');
    put("settings");
    op('(');
  }
  void end_snapshot() {
    op('u');
    op('u');
    op('.');
  }

  void integer(std::int64_t v) {
    if (v >= 0 && v <= 0xff) {
      op('K');
      le(static_cast<std::uint64_t>(v), 1);
    } else if (v >= 0 && v <= 0xffff) {
      op('M');
      le(static_cast<std::uint64_t>(v), 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      op('J');
      le(static_cast<std::uint64_t>(v), 4);
    } else {
      // LONG1: the fewest two's-complement bytes, as Python's encode_long.
      std::string b;
      auto u = static_cast<std::uint64_t>(v);
      for (int i = 0; i < 8; ++i, u >>= 8) b += static_cast<char>(u & 0xff);
      while (b.size() > 1 && ((b.back() == 0 && !(b[b.size() - 2] & 0x80)) ||
                              (b.back() == '\xff' && (b[b.size() - 2] & 0x80))))
        b.pop_back();
      op('\x8a');
      le(b.size(), 1);
      out_ += b;
    }
  }

 private:
  void le(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i, v >>= 8) out_ += static_cast<char>(v & 0xff);
  }
  void index(std::uint32_t n, char short_code, char long_code) {
    if (n < 256) {
      op(short_code);
      le(n, 1);
    } else {
      op(long_code);
      le(n, 4);
    }
  }

  std::string out_;
  std::unordered_map<std::string, std::uint32_t> memo_;
  std::uint32_t next_memo_ = 0;
};

// n entries (n even): alloc/free_completed pairs on cuda:0, each pair sharing one of 8 frames
// lists made of 6 shared frame dicts.
inline std::string synthetic_snapshot_pickle(std::size_t n) {
  Protocol2Writer w;
  const char* files[] = {"/work/model.py", "/work/train.py", "/work/data.py"};
  const char* names[] = {"forward", "backward", "step", "load"};
  const auto frame = [&](int j) {
    w.frame("frame " + std::to_string(j), files[j % 3], 10 + j, names[j % 4]);
  };
  const auto traceback = [&](int t) {
    w.frames("traceback " + std::to_string(t), 3, [&](int k) { frame((t + k) % 6); });
  };
  const auto entry = [&](std::size_t i) {
    const std::size_t k = i / 2;
    w.op('}');
    w.put("entry " + std::to_string(i));
    w.op('(');
    w.text("action");
    w.text(i % 2 == 0 ? "alloc" : "free_completed");
    w.text("addr");
    w.integer(0x7F0000000000 + 1024 * static_cast<std::int64_t>(k % 4096));
    w.text("size");
    w.integer(512 + static_cast<std::int64_t>(k % 1000));
    w.text("stream");
    w.integer(0);
    w.text("time_us");
    w.integer(1700000000000000 + 2 * static_cast<std::int64_t>(k) +
              static_cast<std::int64_t>(i % 2));
    w.text("frames");
    traceback(static_cast<int>(k % 8));
    w.op('u');
  };

  w.begin_history();
  // Python's pickler appends in batches of 1000 (one item alone: APPEND, without MARK).
  if (n == 1) {
    entry(0);
    w.op('a');
  } else if (n > 1) {
    for (std::size_t first = 0; first < n; first += 1000) {
      w.op('(');
      for (std::size_t i = first; i < std::min(n, first + 1000); ++i) entry(i);
      w.op('e');
    }
  }
  w.end_history();
  w.text("PYTORCH_CUDA_ALLOC_CONF");
  w.text("");
  w.text("max_split_size");
  w.integer(-1);
  w.text("expandable_segments");
  w.op('\x89');
  w.end_snapshot();
  return std::move(w.bytes());
}

// One entry of a snapshot's history, for snapshot_pickle.
struct SnapshotEntry {
  std::string action;  // "alloc", "free_completed", ...
  std::uint64_t addr = 0;
  std::uint64_t size = 0;
  std::uint64_t stream = 0;
  std::int64_t time_us = 0;
};

// A snapshot of exactly `entries` on cuda:0 (no frames, no settings), as Python would pickle it.
inline std::string snapshot_pickle(const std::vector<SnapshotEntry>& entries) {
  Protocol2Writer w;
  w.begin_history();
  for (std::size_t first = 0; first < entries.size(); first += 1000) {
    w.op('(');
    for (std::size_t i = first; i < std::min(entries.size(), first + 1000); ++i) {
      const SnapshotEntry& e = entries[i];
      w.op('}');
      w.put_once();
      w.op('(');
      w.text("action");
      w.text(e.action);
      w.text("addr");
      w.integer(static_cast<std::int64_t>(e.addr));
      w.text("size");
      w.integer(static_cast<std::int64_t>(e.size));
      w.text("stream");
      w.integer(static_cast<std::int64_t>(e.stream));
      w.text("time_us");
      w.integer(e.time_us);
      w.op('u');
    }
    w.op('e');
  }
  w.end_history();
  w.end_snapshot();
  return std::move(w.bytes());
}

}  // namespace alloclab::test
