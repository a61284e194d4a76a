#include "alloclab/launch/record_cuda.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>

#include "alloclab/format/alt/alt.hpp"
#include "alloclab/format/merge_by_time.hpp"
#include "alloclab/format/units.hpp"
#include "alloclab/protocol/environment.hpp"
#include "tracer/cuda/saved_maps.hpp"
#include "tracer/writer/frame_namer.hpp"

namespace alloclab::launch {
namespace {

// One process's CUDA and host traces, merged by time into `output` (written beside it, then
// renamed: `output` may be one of the two), and the parts removed.
void merge_parts(const std::string& cuda, const std::string& host, const std::string& output) {
  const Trace merged = merge_by_time(read_alt(cuda), read_alt(host));
  const std::string merging = output + ".merging";
  write_alt(merged, merging);
  std::filesystem::rename(merging, output);
  for (const std::string& part : {cuda, host})
    if (part != output) std::filesystem::remove(part);
}

}  // namespace

void name_saved_frames(Trace& trace, const std::vector<cuda::SavedMaps>& snapshots) {
  std::vector<std::unique_ptr<writer::FrameNamer>> namers(snapshots.size());
  std::size_t current = 0;  // snapshots are in first_frame order, as the frames they name
  for (std::uint32_t i = 0; i < trace.frames().size(); ++i) {
    while (current + 1 < snapshots.size() && snapshots[current + 1].first_frame <= i) ++current;
    if (snapshots.empty() || snapshots[current].first_frame > i) continue;
    if (!namers[current])
      namers[current] = std::make_unique<writer::FrameNamer>(
          writer::FrameNamer::SavedMaps{snapshots[current].text});
    const std::uint64_t address = trace.frames()[i].address;
    writer::FrameName name = namers[current]->name(address);
    trace.set_frame(i, StackFrame{address, std::move(name.function), std::move(name.module),
                                  std::move(name.file), name.line});
  }
}

void name_cuda_trace_file(const std::string& path) {
  const std::string maps = cuda::saved_maps_path(path);
  if (!std::filesystem::exists(maps)) return;
  try {
    std::vector<std::string> warnings;
    const std::vector<cuda::SavedMaps> snapshots = cuda::read_saved_maps(maps, warnings);
    for (const std::string& warning : warnings)
      std::fprintf(stderr, "alloclab: warning: %s\n", warning.c_str());
    Trace trace = read_alt(path);
    name_saved_frames(trace, snapshots);
    const std::string naming = path + ".naming";
    write_alt(trace, naming);
    std::filesystem::rename(naming, path);
    std::filesystem::remove(maps);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "alloclab: warning: the frames of %s stay unnamed: %s\n", path.c_str(),
                 e.what());
  }
}

void note_replaced_nvtx_injection(const char* command) {
  const char* other = std::getenv("NVTX_INJECTION64_PATH");
  if (other == nullptr || *other == '\0') return;
  std::fprintf(stderr,
               "alloclab: note: %s --run-range takes NVTX's ranges from the injection library "
               "NVTX_INJECTION64_PATH named (%s): that tool will not see them in this run\n",
               command, other);
}

void check_cuda_options(const CudaRecordOptions& options) {
  if (!options.run_range.empty() && !options.cuda)
    throw std::invalid_argument("record: --run-range needs --cuda (runs come from NVTX ranges)");
  if (options.cpu && !options.cuda)
    throw std::invalid_argument(
        "record: --cpu needs --cuda (it adds host allocations to a CUDA trace; without --cuda "
        "host allocations are what record records)");
#if !ALLOCLAB_HAVE_CUDA  // from alloclab_strategies: the CUDA upstreams and tracer were built
  if (options.cuda)
    throw std::runtime_error(
        "record --cuda: this alloclab was built without CUDA (ALLOCLAB_CUDA=OFF)");
#endif
}

std::string cpu_trace_path(const CudaRecordOptions& options, const std::string& output) {
  return options.cuda ? output + ".cpu.part" : output;
}

std::string cuda_trace_path(const CudaRecordOptions& options, const std::string& output) {
  return options.cpu ? output + ".cuda.part" : output;
}

void check_part_files(const CudaRecordOptions& options, const std::string& output) {
  if (!options.cuda || !options.cpu) return;
  for (const std::string& part :
       {cpu_trace_path(options, output), cuda_trace_path(options, output)})
    if (std::filesystem::exists(part))
      throw std::runtime_error(part + " exists (left by an interrupted recording?); remove it");
}

std::string cuda_injection_library() {
  if (const char* env = std::getenv("ALLOCLAB_CUDA_INJECTION"); env && *env) return env;
  const std::string library = (library_dir() / "liballoclab_cuda.so").string();
  if (!std::filesystem::exists(library))
    throw std::runtime_error("CUDA tracer not found at " + library +
                             " (build with ALLOCLAB_CUDA=ON or set ALLOCLAB_CUDA_INJECTION)");
  return library;
}

void set_cuda_environment(const CudaRecordOptions& options, const std::string& injection,
                          const std::string& output) {
  setenv("CUDA_INJECTION64_PATH", injection.c_str(), 1);
  setenv(protocol::env_cuda_output, cuda_trace_path(options, output).c_str(), 1);
  if (options.run_range.empty()) return;
  setenv(protocol::env_run_range, options.run_range.c_str(), 1);
  setenv("NVTX_INJECTION64_PATH", injection.c_str(), 1);
}

void finish_cuda_record(const CudaRecordOptions& options, const std::string& output) {
  const std::string cuda = cuda_trace_path(options, output);
  const bool have_cuda = std::filesystem::exists(cuda);
  // Named before a merge: the saved maps index the part's own frame table.
  if (have_cuda) name_cuda_trace_file(cuda);
  if (!have_cuda)
    std::fprintf(stderr,
                 "alloclab: no CUDA trace: the program never initialised CUDA, or CUPTI "
                 "refused (no device, or another profiler holds it; see above)\n");
  if (!options.cpu) return;
  const std::string cpu = cpu_trace_path(options, output);
  const bool have_cpu = std::filesystem::exists(cpu);
  if (!have_cuda || !have_cpu) {
    if (have_cuda || have_cpu) std::filesystem::rename(have_cuda ? cuda : cpu, output);
    return;
  }
  merge_parts(cuda, cpu, output);
}

std::vector<TracedFile> merge_follower_traces(const CudaRecordOptions& options,
                                              std::vector<TracedFile> files) {
  if (!options.cuda) return files;
  for (std::size_t f = 1; f < files.size(); ++f)  // files[0]: named by finish_cuda_record
    if (std::filesystem::exists(files[f].path)) name_cuda_trace_file(files[f].path);
  if (!options.cpu) return files;
  struct Parts {
    std::vector<std::size_t> host, cuda;
  };
  std::map<std::int64_t, Parts> by_pid;
  for (std::size_t f = 1; f < files.size(); ++f) {  // files[0]: the started process, merged
    const TracedFile& file = files[f];
    if (!file.incomplete.empty() || !std::filesystem::exists(file.path)) continue;
    std::int64_t pid = 0;
    try {
      pid = read_alt_metadata(file.path).value("pid", std::int64_t{0});
    } catch (const std::exception&) {
      continue;  // the summary reports what is wrong with it
    }
    if (pid == 0) continue;
    Parts& parts = by_pid[pid];
    (file.path.ends_with(".cuda.alt") ? parts.cuda : parts.host).push_back(f);
  }
  std::vector<bool> merged_away(files.size(), false);
  for (const auto& [pid, parts] : by_pid) {
    if (parts.cuda.empty() || parts.host.empty()) continue;
    if (parts.cuda.size() != 1 || parts.host.size() != 1) {
      std::fprintf(stderr,
                   "alloclab: process %lld wrote %zu host and %zu CUDA traces (one per image); "
                   "they are left apart\n",
                   static_cast<long long>(pid), parts.host.size(), parts.cuda.size());
      continue;
    }
    const std::string& host = files[parts.host.front()].path;
    const std::string& cuda = files[parts.cuda.front()].path;
    try {
      merge_parts(cuda, host, host);
      merged_away[parts.cuda.front()] = true;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "alloclab: cannot merge %s into %s: %s\n", cuda.c_str(), host.c_str(),
                   e.what());
    }
  }
  std::vector<TracedFile> kept;
  for (std::size_t f = 0; f < files.size(); ++f)
    if (!merged_away[f]) kept.push_back(std::move(files[f]));
  return kept;
}

}  // namespace alloclab::launch
