#pragma once
// `plugin:PATH.so[,key=value...]`: a strategy that lives in a shared library, loaded at run time
// through the C ABI of alloclab/strategy_plugin.h (how to write one: docs/plugins.md).
// - PATH is the first item after `plugin:` (it may also be written `path=PATH`). It is a file path,
//   relative to the current directory unless absolute; the library search path is never used.
// - The other key=value pairs belong to the plug-in: they are checked against the keys its table
//   lists, then handed to its create().
// - Every Strategy call is forwarded to the plug-in; the counters are the plug-in's own, read back
//   after every call. The library stays loaded as long as any strategy made from it exists.
// Every problem with the spec, the library or the parameters is a SpecError that names the
// library; a plug-in that breaks the ABI's rules at run time (a block smaller than the request)
// is a std::logic_error.
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "alloclab/format/address_map.hpp"
#include "alloclab/strategies/params.hpp"
#include "alloclab/strategies/strategy.hpp"
#include "alloclab/strategy_plugin.h"

namespace alloclab {

// Whether `spec` names the plug-in loader (`plugin` before the ':').
bool is_plugin_spec(std::string_view spec);

// Splits `plugin:PATH[,key=value...]` into the name `plugin` and the parameters, PATH first under
// the key `path`. PATH is taken verbatim up to the first ',' (it may contain '='); the rest is read
// as split_spec reads parameters, with the same errors. Throws SpecError.
ParsedSpec split_plugin_spec(std::string_view spec);

// The registry's factory for `plugin`: loads params' `path` and creates an instance with the
// other parameters.
std::unique_ptr<Strategy> make_plugin_strategy(const StrategyParams& params, Upstream& upstream);

// A loaded plug-in: the dlopen() handle and its checked table. dlclose() when the last owner
// (a PluginStrategy, or whoever opened it) goes away.
class PluginLibrary {
 public:
  // dlopen(RTLD_NOW | RTLD_LOCAL)s `path` and checks its table: entry point present, ABI version,
  // table size, no missing function. Throws SpecError saying which check failed.
  static std::shared_ptr<const PluginLibrary> open(const std::string& path);
  ~PluginLibrary();
  PluginLibrary(const PluginLibrary&) = delete;
  PluginLibrary& operator=(const PluginLibrary&) = delete;

  const alloclab_strategy_plugin& table() const { return *table_; }
  const std::string& path() const { return path_; }
  const std::string& name() const { return name_; }
  const std::string& summary() const { return summary_; }
  // The keys the plug-in accepts, or nullopt when it checks them itself.
  const std::optional<std::vector<std::string>>& keys() const { return keys_; }

 private:
  PluginLibrary(std::string path, void* handle) : path_(std::move(path)), handle_(handle) {}

  std::string path_;
  void* handle_;
  const alloclab_strategy_plugin* table_ = nullptr;
  std::string name_;
  std::string summary_;
  std::optional<std::vector<std::string>> keys_;
};

class PluginStrategy final : public Strategy {
 public:
  // Creates an instance of `library`'s strategy over `upstream` (which must outlive it) with the
  // plug-in's own parameters. Throws SpecError for an unknown key or when create() refuses.
  PluginStrategy(std::shared_ptr<const PluginLibrary> library,
                 const std::vector<std::pair<std::string, std::string>>& params,
                 Upstream& upstream);
  ~PluginStrategy() override;
  // The plug-in keeps a pointer to upstream_bridge_, which points back here: never moved.
  PluginStrategy(const PluginStrategy&) = delete;
  PluginStrategy& operator=(const PluginStrategy&) = delete;

  std::optional<Block> allocate(std::uint64_t size, std::uint64_t stream) override;
  void deallocate(const Block& block) override;
  void begin_run() override;
  void end_run() override;
  void release() override;
  const StrategyStats& stats() const override { return stats_; }

  const PluginLibrary& library() const { return *library_; }

 private:
  // The alloclab_upstream functions handed to the plug-in. An exception from the Upstream never
  // crosses the plug-in's C frames: it is kept in pending_ (allocate then reports out of memory)
  // and rethrown once the plug-in's call has returned.
  static int bridge_allocate(void* context, std::uint64_t bytes, alloclab_block* out) noexcept;
  static void bridge_deallocate(void* context, alloclab_block block) noexcept;
  // After every call into the plug-in: rethrows a pending exception, reads the counters back.
  void after_call();
  // "plugin 'NAME' (PATH), in its CALL()": who broke a rule, for messages.
  std::string who() const;

  std::shared_ptr<const PluginLibrary> library_;  // first member: destroyed (closed) last
  const alloclab_strategy_plugin& table_;
  Upstream& upstream_;
  alloclab_upstream upstream_bridge_;
  std::exception_ptr pending_;
  void* self_ = nullptr;
  StrategyStats stats_;
  // The plug-in's function being called ("create", "allocate", ...), for messages.
  const char* in_call_ = "create";
  // address -> capacity of every block the plug-in has from the upstream. A block it gives back
  // twice, never had, or with another capacity is refused here, naming the plug-in: a real
  // upstream would corrupt its heap or abort the process, and SimUpstream's message names
  // neither the plug-in nor what it did.
  AddressMap<std::uint64_t> held_;
};

}  // namespace alloclab
