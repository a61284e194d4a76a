#pragma once
// The size of a test that checks behaviour at the size of real data. Under AddressSanitizer each
// allocation and memory access costs several times as much, and those tests alone took most of
// the sanitized suite's time; that build runs them at a quarter of the size, which still takes
// every code path they take (buffers grown, tables rehashed, chunks chained), while the default
// build runs them at full size.
#include <cstddef>

namespace alloclab::test {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitized = true;
#else
inline constexpr bool kAddressSanitized = false;
#endif
#else
inline constexpr bool kAddressSanitized = false;
#endif

constexpr std::size_t real_size(std::size_t n) {
  return kAddressSanitized ? n / 4 : n;
}

}  // namespace alloclab::test
