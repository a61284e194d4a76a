// The writer's flush algorithm over memory of the test's own, filled as the recorder fills it
// (alloclab/protocol/recorder_memory.hpp): order, moved reallocs, labels, slots in flight, and
// buffers given back.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "alloclab/protocol/recorder_memory.hpp"
#include "tracer/writer/collector.hpp"

namespace alloclab::writer {
namespace {

using namespace alloclab::protocol;

// A recorder's shared memory with a pool of `slots` buffers, and the recorder's side of it.
class FakeRecorder {
 public:
  explicit FakeRecorder(std::uint32_t slots = 4) {
    shared_ = std::make_unique<Shared>();
    const std::size_t slot_bytes = (buffer_bytes(0) + 4095) & ~std::size_t{4095};
    pool_.reset(static_cast<char*>(std::aligned_alloc(4096, slot_bytes * slots)));
    std::memset(pool_.get(), 0, slot_bytes * slots);
    shared_->pool.slot_bytes = slot_bytes;
    shared_->pool.slots = slots;
  }

  Shared& shared() { return *shared_; }
  char* pool() { return pool_.get(); }
  Buffer* buffer(BufferRef ref) { return buffer_at(pool(), shared_->pool, ref); }

  // A thread's new buffer, registered as the recorder registers it.
  BufferRef start_buffer(std::uint64_t thread) {
    const BufferRef ref = ++used_;
    Buffer* b = buffer(ref);
    b->thread = thread;
    b->next_new = shared_->globals.new_buffers.load();
    shared_->globals.new_buffers.store(ref);
    return ref;
  }

  // Reserves a slot in `ref` and takes the next number; the record stays in flight until done.
  struct Slot {
    Record* record;
    std::uint64_t seq;
  };
  Slot reserve(BufferRef ref, std::uint32_t count = 1) {
    Buffer* b = buffer(ref);
    EXPECT_LE(b->reserved.load() + count, buffer_records) << "the test's buffer overflows";
    const std::uint32_t slot = b->reserved.fetch_add(count);
    return Slot{&b->records[slot], shared_->globals.seq.fetch_add(1)};
  }
  static void complete(const Slot& s, std::uint8_t op, std::uint64_t address, std::uint64_t size,
                       std::uint64_t flags = 0) {
    s.record->ticks = 1000 + s.seq;
    s.record->address_align = address;
    s.record->size_op = pack_size_op(size, op, kind_host) | flags;
    s.record->seq_plus1.store(s.seq + 1);
  }
  std::uint64_t event(BufferRef ref, std::uint8_t op, std::uint64_t address,
                      std::uint64_t size = 0) {
    const Slot s = reserve(ref);
    complete(s, op, address, size);
    return s.seq;
  }
  void marker(BufferRef ref, std::uint8_t op, const char* label) {
    const Slot s = reserve(ref);
    const std::uint64_t index = shared_->globals.label_next.fetch_add(1) % label_slots;
    LabelSlot& slot = shared_->globals.labels[index];
    char text[label_bytes] = {};
    std::strncpy(text, label, label_bytes - 1);
    for (std::size_t w = 0; w < LabelSlot::words; ++w) {
      std::uint64_t word;
      std::memcpy(&word, text + w * 8, 8);
      slot.text[w].store(word);
    }
    slot.seq_plus1.store(s.seq + 1);
    complete(s, op, index, 0);
  }
  // A realloc that moved, as the hooks record it: free(old) (flagged), then alloc(new) with its
  // op_pair companion in the next slot.
  void moved_realloc(BufferRef ref, std::uint64_t old_address, std::uint64_t new_address,
                     std::uint64_t size) {
    const Slot freed = reserve(ref);
    complete(freed, op_free, old_address, 0, realloc_free_bit);
    complete_move(ref, freed, new_address, size);
  }
  // The alloc(new) of a moved realloc whose free(old) is `freed`, with its op_pair companion.
  void complete_move(BufferRef ref, const Slot& freed, std::uint64_t new_address,
                     std::uint64_t size) {
    const Slot made = reserve(ref, 2);
    made.record[1].address_align = freed.seq;
    made.record[1].size_op = pack_size_op(0, op_pair, 0);
    made.record[1].seq_plus1.store(made.seq + 1);
    complete(made, op_alloc, new_address, size);
  }
  void abandon(BufferRef ref, bool full) {
    Buffer* b = buffer(ref);
    if (full) {
      b->handed_over_full = true;
      shared_->globals.full_buffers.fetch_add(1);
    }
    b->abandoned.store(true);
  }

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<Shared> shared_;
  std::unique_ptr<char, Free> pool_;
  BufferRef used_ = 0;
};

// Everything a flush hands on, one event per string: "alloc 0x10 64", "free 0x10", "mark x".
struct Written {
  std::vector<std::string> events;
  std::vector<std::uint64_t> threads;
  Collector::Sink sink() {
    return [this](const Trace& batch, bool) {
      for (std::size_t i = 0; i < batch.size(); ++i) {
        char text[128];
        const Op op = batch.op(i);
        if (op == Op::alloc)
          std::snprintf(text, sizeof text, "alloc %#llx %llu",
                        static_cast<unsigned long long>(batch.address(i)),
                        static_cast<unsigned long long>(batch.size_of(i)));
        else if (op == Op::free)
          std::snprintf(text, sizeof text, "free %#llx",
                        static_cast<unsigned long long>(batch.address(i)));
        else
          std::snprintf(text, sizeof text, "%s %s", std::string(to_string(op)).c_str(),
                        std::string(batch.label(i)).c_str());
        events.emplace_back(text);
        threads.push_back(batch.origins()[batch.origin_index(i)].thread);
      }
    };
  }
};

TEST(Collector, events_of_several_threads_come_out_in_sequence_order) {
  FakeRecorder rec;
  const BufferRef a = rec.start_buffer(11), b = rec.start_buffer(22);
  rec.event(a, op_alloc, 0x100, 8);
  rec.event(b, op_alloc, 0x200, 16);
  rec.event(b, op_free, 0x100);
  rec.event(a, op_free, 0x200);
  Collector collector(rec.shared(), rec.pool(), nullptr);
  Written w;
  collector.flush(Collector::Kind::requested, w.sink());
  EXPECT_EQ(w.events, (std::vector<std::string>{"alloc 0x100 8", "alloc 0x200 16", "free 0x100",
                                                "free 0x200"}));
  EXPECT_EQ(w.threads, (std::vector<std::uint64_t>{11, 22, 22, 11}));
  // Nothing twice: the next flush has nothing new.
  Written again;
  collector.flush(Collector::Kind::requested, again.sink());
  EXPECT_TRUE(again.events.empty());
}

TEST(Collector, an_alignment_past_the_largest_is_written_as_the_largest) {
  // aligned_alloc accepts any alignment; the recorder rounds it up to a power of two, so one
  // above 2^63 gives code 65, one more than an alignment field can hold.
  FakeRecorder rec;
  const BufferRef a = rec.start_buffer(1);
  const FakeRecorder::Slot slot = rec.reserve(a);
  FakeRecorder::complete(slot, op_alloc, 0x1000 | std::uint64_t{65} << field_bits, 8);
  const FakeRecorder::Slot plain = rec.reserve(a);
  FakeRecorder::complete(plain, op_alloc, 0x2000 | std::uint64_t{13} << field_bits, 8);
  Collector collector(rec.shared(), rec.pool(), nullptr);
  std::vector<std::uint64_t> alignments;
  collector.flush(Collector::Kind::requested, [&alignments](const Trace& batch, bool) {
    for (std::size_t i = 0; i < batch.size(); ++i) alignments.push_back(batch.alignment(i));
  });
  EXPECT_EQ(alignments, (std::vector<std::uint64_t>{std::uint64_t{1} << 63, 4096}));
}

TEST(Collector, a_moved_realloc_is_written_alloc_new_then_free_old) {
  FakeRecorder rec;
  const BufferRef a = rec.start_buffer(1);
  rec.event(a, op_alloc, 0x100, 8);
  rec.moved_realloc(a, 0x100, 0x300, 64);
  rec.event(a, op_free, 0x300);
  Collector collector(rec.shared(), rec.pool(), nullptr);
  Written w;
  collector.flush(Collector::Kind::requested, w.sink());
  EXPECT_EQ(w.events, (std::vector<std::string>{"alloc 0x100 8", "alloc 0x300 64", "free 0x100",
                                                "free 0x300"}));
}

// A flush can come between a moved realloc's free(old) and its alloc(new): whatever kind of
// flush it is (a requested one, as a marker short of label room asks for, or a periodic one), the
// free waits for the alloc so the two still come out alloc(new) first.
void split_realloc_across_a_flush(Collector::Kind kind) {
  FakeRecorder rec;
  const BufferRef a = rec.start_buffer(1);
  rec.event(a, op_alloc, 0x100, 8);
  const FakeRecorder::Slot freed = rec.reserve(a);
  FakeRecorder::complete(freed, op_free, 0x100, 0, realloc_free_bit);
  Collector collector(rec.shared(), rec.pool(), nullptr);
  Written w;
  collector.flush(kind, w.sink());
  rec.complete_move(a, freed, 0x300, 64);
  rec.event(a, op_free, 0x300);
  collector.flush(kind, w.sink());
  EXPECT_EQ(w.events, (std::vector<std::string>{"alloc 0x100 8", "alloc 0x300 64", "free 0x100",
                                                "free 0x300"}));
}

TEST(Collector, a_moved_realloc_split_by_a_periodic_flush_is_written_alloc_new_first) {
  split_realloc_across_a_flush(Collector::Kind::periodic);
}

TEST(Collector, a_moved_realloc_split_by_a_requested_flush_is_written_alloc_new_first) {
  split_realloc_across_a_flush(Collector::Kind::requested);
}

// An allocator below the recorder that allocates inside the realloc (as `alloclab run --record`'s
// strategies do) puts events of the realloc's thread between its free(old) and its alloc(new).
TEST(Collector, a_split_moved_realloc_with_allocations_inside_is_written_alloc_new_first) {
  FakeRecorder rec;
  const BufferRef a = rec.start_buffer(1);
  rec.event(a, op_alloc, 0x100, 8);
  const FakeRecorder::Slot freed = rec.reserve(a);
  FakeRecorder::complete(freed, op_free, 0x100, 0, realloc_free_bit);
  rec.event(a, op_alloc, 0x500, 48);  // the allocator's own, inside the realloc
  Collector collector(rec.shared(), rec.pool(), nullptr);
  Written w;
  collector.flush(Collector::Kind::periodic, w.sink());
  rec.complete_move(a, freed, 0x300, 64);
  rec.event(a, op_free, 0x300);
  collector.flush(Collector::Kind::periodic, w.sink());
  EXPECT_EQ(w.events, (std::vector<std::string>{"alloc 0x100 8", "alloc 0x300 64", "free 0x100",
                                                "alloc 0x500 48", "free 0x300"}));
}

// On a loaded machine the realloc's thread may lose the core between its free and its alloc
// for many flushes (a program that marks without pause asks for one every millisecond).
TEST(Collector, a_moved_realloc_split_over_several_flushes_is_written_alloc_new_first) {
  FakeRecorder rec;
  const BufferRef a = rec.start_buffer(1);
  const BufferRef b = rec.start_buffer(2);
  rec.event(a, op_alloc, 0x100, 8);
  const FakeRecorder::Slot freed = rec.reserve(a);
  FakeRecorder::complete(freed, op_free, 0x100, 0, realloc_free_bit);
  Collector collector(rec.shared(), rec.pool(), nullptr);
  Written w;
  for (int flush = 0; flush < 5; ++flush) {
    rec.event(b, op_alloc, 0x1000 + 0x100 * static_cast<std::uint64_t>(flush), 16);
    collector.flush(Collector::Kind::requested, w.sink());
  }
  rec.complete_move(a, freed, 0x300, 64);
  collector.flush(Collector::Kind::last, w.sink());
  const auto at = [&](const std::string& e) {
    return std::find(w.events.begin(), w.events.end(), e) - w.events.begin();
  };
  ASSERT_EQ(w.events.size(), 8u);
  EXPECT_LT(at("alloc 0x300 64"), at("free 0x100"));
  EXPECT_EQ(w.events.front(), "alloc 0x100 8");
}

TEST(Collector, the_last_flush_writes_a_realloc_free_whose_alloc_never_came) {
  FakeRecorder rec;
  const BufferRef a = rec.start_buffer(1);
  rec.event(a, op_alloc, 0x100, 8);
  FakeRecorder::complete(rec.reserve(a), op_free, 0x100, 0, realloc_free_bit);
  Collector collector(rec.shared(), rec.pool(), nullptr);
  Written w;
  collector.flush(Collector::Kind::last, w.sink());
  EXPECT_EQ(w.events, (std::vector<std::string>{"alloc 0x100 8", "free 0x100"}));
}

TEST(Collector, markers_carry_their_labels_and_free_the_label_ring) {
  FakeRecorder rec;
  const BufferRef a = rec.start_buffer(1);
  rec.marker(a, op_run_begin, "step 1");
  rec.event(a, op_alloc, 0x100, 8);
  rec.marker(a, op_run_end, "");
  Collector collector(rec.shared(), rec.pool(), nullptr);
  Written w;
  collector.flush(Collector::Kind::requested, w.sink());
  EXPECT_EQ(w.events, (std::vector<std::string>{"run_begin step 1", "alloc 0x100 8", "run_end "}));
  EXPECT_EQ(rec.shared().globals.labels_collected.load(), 2u);
}

TEST(Collector, a_slot_in_flight_is_given_up_on_then_written_late) {
  FakeRecorder rec;
  const BufferRef a = rec.start_buffer(1), b = rec.start_buffer(2);
  rec.event(a, op_alloc, 0x100, 8);
  const FakeRecorder::Slot stuck = rec.reserve(a);  // its thread stopped inside a call
  rec.event(b, op_alloc, 0x200, 16);
  Collector collector(rec.shared(), rec.pool(), nullptr);
  Written w;
  const auto start = std::chrono::steady_clock::now();
  collector.flush(Collector::Kind::requested, w.sink());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(w.events, (std::vector<std::string>{"alloc 0x100 8", "alloc 0x200 16"}));
  EXPECT_EQ(collector.overdue(), 1u);
  FakeRecorder::complete(stuck, op_free, 0x100, 0);
  Written late;
  collector.flush(Collector::Kind::requested, late.sink());
  EXPECT_EQ(late.events, (std::vector<std::string>{"free 0x100"}));
  EXPECT_EQ(collector.overdue(), 0u);
}

TEST(Collector, emptied_buffers_go_back_to_the_program) {
  FakeRecorder rec;
  const BufferRef a = rec.start_buffer(1), b = rec.start_buffer(2);
  rec.event(a, op_alloc, 0x100, 8);
  rec.event(b, op_alloc, 0x200, 8);
  rec.abandon(a, true);   // handed over full
  rec.abandon(b, false);  // its thread ended
  Collector collector(rec.shared(), rec.pool(), nullptr);
  Written w;
  collector.flush(Collector::Kind::periodic, w.sink());
  EXPECT_EQ(w.events.size(), 2u);
  EXPECT_EQ(rec.shared().globals.full_buffers.load(), 0);
  std::vector<BufferRef> spares;
  for (const auto& spare : rec.shared().spares)
    if (spare.load()) spares.push_back(spare.load());
  EXPECT_EQ(spares.size(), 2u);
  for (const BufferRef ref : spares) {
    const Buffer* buffer = rec.buffer(ref);
    EXPECT_EQ(buffer->reserved.load(), 0u);
    EXPECT_FALSE(buffer->abandoned.load());
    EXPECT_EQ(buffer->floor, rec.shared().globals.seq.load());  // old slots read as in flight
  }
}

TEST(Collector, a_backlog_is_written_in_passes_without_losing_an_event) {
  // Two threads, more events than one pass takes (4 buffers' worth), a moved realloc now and
  // then, each thread moving on to a new buffer whenever one is full.
  FakeRecorder rec(16);
  BufferRef current[2] = {rec.start_buffer(1), rec.start_buffer(2)};
  const auto room = [&](int thread, std::uint32_t slots) {
    if (rec.buffer(current[thread])->reserved.load() + slots > buffer_records) {
      rec.abandon(current[thread], true);
      current[thread] = rec.start_buffer(static_cast<std::uint64_t>(thread + 1));
    }
    return current[thread];
  };
  std::uint64_t expected = 0;
  for (std::uint64_t i = 0; i < 200000; ++i) {
    const int thread = i % 3 ? 0 : 1;
    rec.event(room(thread, 2), op_alloc, 0x100000 + 16 * i, 16);
    rec.event(room(thread, 1), op_free, 0x100000 + 16 * i);
    expected += 2;
    if (i % 1000 == 0) {
      rec.event(room(thread, 5), op_alloc, 0x900000000 + i, 8);
      rec.moved_realloc(current[thread], 0x900000000 + i, 0xa00000000 + i, 32);
      rec.event(current[thread], op_free, 0xa00000000 + i);
      expected += 4;
    }
  }
  Collector collector(rec.shared(), rec.pool(), nullptr);
  Written w;
  collector.flush(Collector::Kind::periodic, w.sink());
  collector.flush(Collector::Kind::last, w.sink());  // what the first held back
  ASSERT_EQ(w.events.size(), expected);
  std::uint64_t reallocs = 0;
  for (std::size_t i = 0; i + 2 < w.events.size(); ++i) {
    if (!w.events[i].starts_with("alloc 0x9000")) continue;
    EXPECT_TRUE(w.events[i + 1].starts_with("alloc 0xa000")) << i;  // alloc(new) first
    EXPECT_TRUE(w.events[i + 2].starts_with("free 0x9000")) << i;
    ++reallocs;
  }
  EXPECT_EQ(reallocs, 200u);
  EXPECT_EQ(rec.shared().globals.full_buffers.load(), 0);  // every full buffer emptied
}

TEST(FrameNamer, maps_lines_give_the_files_and_their_ranges) {
  const std::vector<MappedFile> files = parse_maps(
      "55d0a0000000-55d0a0001000 r--p 00000000 fd:01 123 /usr/bin/prog\n"
      "55d0a0001000-55d0a0003000 r-xp 00001000 fd:01 123 /usr/bin/prog\n"
      "55d0a1000000-55d0a1021000 rw-p 00000000 00:00 0          [heap]\n"
      "7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n"
      "7f0000100000-7f0000180000 r-xp 00000000 fd:01 456 /lib/with space/libx.so (deleted)\n"
      "garbage\n");
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[1].start, 0x55d0a0001000u);
  EXPECT_EQ(files[1].end, 0x55d0a0003000u);
  EXPECT_EQ(files[1].path, "/usr/bin/prog");
  EXPECT_EQ(files[2].path, "/lib/with space/libx.so (deleted)");
}

TEST(FrameNamer, a_function_of_this_program_is_named) {
  FrameNamer namer(getpid());
  const auto address = reinterpret_cast<std::uint64_t>(&parse_maps) + 1;
  const FrameName name = namer.name(address);
  EXPECT_NE(name.module.find("alloclab_writer_tests"), std::string::npos) << name.module;
#ifdef ALLOCLAB_LIBDW
  EXPECT_NE(name.function.find("parse_maps"), std::string::npos) << name.function;
#endif
}

#ifdef ALLOCLAB_LIBDW
// The modules are reported again when a frame is in none of them; the tables of the modules
// that stay go on naming frames, and a new module gets its own.
TEST(FrameNamer, a_library_opened_after_the_first_frame_is_named_and_the_others_still_are) {
  FrameNamer namer(getpid());
  const auto own = reinterpret_cast<std::uint64_t>(&parse_maps) + 1;
  EXPECT_NE(namer.name(own).function.find("parse_maps"), std::string::npos);
  void* library = dlopen("libresolv.so.2", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  void* function = dlsym(library, "__b64_ntop");
  ASSERT_NE(function, nullptr) << dlerror();
  namer.allow_refresh();
  const FrameName name = namer.name(reinterpret_cast<std::uint64_t>(function) + 1);
  EXPECT_NE(name.module.find("libresolv"), std::string::npos) << name.module;
  EXPECT_NE(name.function.find("b64_ntop"), std::string::npos) << name.function;
  EXPECT_NE(namer.name(own).function.find("parse_maps"), std::string::npos);
  dlclose(library);
}
#endif

}  // namespace
}  // namespace alloclab::writer
