#pragma once
// What every fuzz target shares: the contract it checks, and the pipeline after a reader.
//
// A reader must either return a trace or throw the error it documents (InputError for files,
// SpecError for specs): a crash, a sanitizer report, a leak or any other exception is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "alloclab/format/error.hpp"
#include "alloclab/format/resolve.hpp"
#include "alloclab/format/summary.hpp"
#include "alloclab/format/trace.hpp"
#include "alloclab/strategies/params.hpp"

namespace alloclab::fuzz {

// Runs `work`; documented errors are fine, anything else stops the fuzzer with its message.
template <typename Work>
void expect_clean(Work&& work) {
  try {
    work();
  } catch (const InputError&) {
  } catch (const SpecError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "undocumented exception: %s\n", e.what());
    std::abort();
  }
}

// Whatever a reader accepted must survive what every command does next.
inline void resolve_and_summarize(const Trace& trace) {
  const ResolvedTrace resolved = resolve(trace);
  const TraceSummary summary = summarize(trace, resolved);
  if (summary.events != trace.size()) {
    std::fprintf(stderr, "summary counts %llu events, trace holds %zu\n",
                 static_cast<unsigned long long>(summary.events), trace.size());
    std::abort();
  }
}

inline std::string as_text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace alloclab::fuzz
