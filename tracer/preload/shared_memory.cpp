// The memory the recorder shares with its writer process (alloclab/protocol/recorder_memory.hpp):
// two System V shared memory segments, one that takes the place of g_shared's own pages (so the
// hot path keeps reaching the globals at a fixed address) and one for the buffer pool. System V
// rather than a memfd: a memfd is a file, and a program under a small RLIMIT_FSIZE could not
// have one of the pool's size. Both are marked for removal as soon as they are attached: the
// writer still attaches them by id (Linux allows that), and they go away with the last process
// that maps them, however it ends.
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>

#include <cstring>

#include "kernel_call.hpp"
#include "recorder.hpp"
#include "stacks.hpp"

namespace alloclab::preload {
namespace {

SharedMemoryIds g_ids{-1, -1};
std::size_t g_pool_bytes = 0;

// Enough for a writer far behind (max_buffers full ones) and thousands of threads with one
// each; memory only once used (SHM_NORESERVE), so a smaller pool is tried only where the system
// allows less.
constexpr std::uint32_t pool_slot_counts[] = {4096, 1024, 256};

// A new segment attached at `address` (anywhere: nullptr) and marked for removal; -1 on failure.
long attached_segment(std::size_t bytes, int& id, const void* address = nullptr) {
  id = static_cast<int>(
      kernel_call(SYS_shmget, IPC_PRIVATE, bytes, IPC_CREAT | IPC_EXCL | SHM_NORESERVE | 0600));
  if (id < 0) return -1;
  const long at = kernel_call(SYS_shmat, id, address, 0);
  kernel_call(SYS_shmctl, id, IPC_RMID, nullptr);
  if (at == -1) id = -1;
  return at;
}

// Puts `fresh` (a mapping of sizeof(Shared) bytes) in g_shared's place with g_shared's contents.
// The copy is made while nothing else writes there (before tracing starts; in a fork child,
// before it records anything), and mremap swaps it in whole, so g_shared is never unmapped.
bool swap_in(void* fresh) {
  std::memcpy(fresh, static_cast<void*>(&g_shared), sizeof(Shared));
  const long moved = kernel_call(SYS_mremap, fresh, sizeof(Shared), sizeof(Shared),
                                 MREMAP_MAYMOVE | MREMAP_FIXED, &g_shared);
  if (moved == -1) {
    kernel_call(SYS_munmap, fresh, sizeof(Shared));
    return false;
  }
  return true;
}

void clear_pool() {
  for (std::atomic<BufferRef>& spare : g_shared.spares) spare.store(0);
  PoolLayout& pool = g_shared.pool;
  pool.slot_bytes = 0;
  pool.slots = 0;
  pool.next_unused.store(0);
  pool.free_list.store(0);
}

bool make_pool() {
  const std::size_t slot_bytes = (buffer_bytes(g_stack_depth) + 4095) & ~std::size_t{4095};
  for (const std::uint32_t slots : pool_slot_counts) {
    const long p = attached_segment(slot_bytes * slots, g_ids.pool);
    if (p == -1) continue;
    clear_pool();
    g_shared.pool.slot_bytes = slot_bytes;
    g_shared.pool.slots = slots;
    g_pool_base = reinterpret_cast<char*>(p);
    g_pool_bytes = slot_bytes * slots;
    return true;
  }
  return false;
}

}  // namespace

bool make_shared_memory() {
  // The writer starts where this process's numbers are now (a fork child's go on from its
  // parent's).
  g_shared.settings.first_seq = g.seq.load();
  if (!make_pool()) return false;
  const long shared = attached_segment(sizeof(Shared), g_ids.shared);
  if (shared == -1 || !swap_in(reinterpret_cast<void*>(shared))) {
    leave_shared_memory();
    return false;
  }
  return true;
}

void leave_shared_memory() {
  if (g_ids.shared >= 0) {
    const long own = kernel_call(SYS_mmap, nullptr, sizeof(Shared), PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (own != -1) swap_in(reinterpret_cast<void*>(own));
  }
  clear_pool();
  if (g_pool_base) kernel_call(SYS_shmdt, g_pool_base);
  g_pool_base = nullptr;
  g_pool_bytes = 0;
  g_ids = SharedMemoryIds{-1, -1};
}

SharedMemoryIds shared_memory_ids() {
  return g_ids;
}

}  // namespace alloclab::preload
