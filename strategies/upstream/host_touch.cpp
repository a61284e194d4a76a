#include <cstdint>

#include "alloclab/strategies/strategy.hpp"

namespace alloclab {

void touch_host_pages(std::uint64_t address, std::uint64_t bytes) {
  if (bytes == 0) return;
  constexpr std::uint64_t kPage = 4096;
  // The first byte, then the start of every later page inside the range. volatile: the writes
  // must happen even though nothing reads them.
  auto* first = reinterpret_cast<volatile unsigned char*>(static_cast<std::uintptr_t>(address));
  *first = 1;
  const std::uint64_t end = address + bytes;
  for (std::uint64_t page = (address / kPage + 1) * kPage; page < end; page += kPage)
    *reinterpret_cast<volatile unsigned char*>(static_cast<std::uintptr_t>(page)) = 1;
}

}  // namespace alloclab
