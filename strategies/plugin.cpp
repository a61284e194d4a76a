// The plug-in loader: dlopen, the checks of the ABI's rules, and the bridge between Strategy /
// Upstream and the C tables of alloclab/strategy_plugin.h. Messages reach the user as-is.
#include "alloclab/strategies/plugin.hpp"

#include <dlfcn.h>

#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace alloclab {
namespace {

constexpr std::string_view kUsage =
    "expected plugin:PATH.so[,key=value...], e.g. plugin:./my_strategy.so,max_cached=1GiB";

// The size of ABI 1's table as first released: everything up to and including `destroy`. A table
// at least this large has every member this host reads; members appended later are read only
// when struct_size covers them.
constexpr std::size_t kTableSizeV1 =
    offsetof(alloclab_strategy_plugin, destroy) + sizeof(alloclab_strategy_plugin::destroy);

// Big enough for any sensible one-line message; a longer one is cut, never overrun.
constexpr std::size_t kErrorBufferSize = 1024;

std::string last_dl_error() {
  const char* text = dlerror();
  return text != nullptr ? text : "unknown error";
}

std::string hex_address(std::uint64_t address) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(address));
  return text;
}

// The function pointers every ABI 1 table must fill in, with their names for the message.
struct RequiredFunction {
  const char* name;
  bool present;
};

}  // namespace

// ---- the spec -----------------------------------------------------------------------------------

bool is_plugin_spec(std::string_view spec) {
  const std::string_view s = trim_spaces(spec);
  return trim_spaces(s.substr(0, s.find(':'))) == "plugin";
}

ParsedSpec split_plugin_spec(std::string_view spec) {
  const std::string_view s = trim_spaces(spec);
  if (!is_plugin_spec(s)) {
    throw std::invalid_argument("split_plugin_spec: not a plugin spec: " + std::string(s));
  }
  const std::size_t colon = s.find(':');
  const std::string_view rest = colon == std::string_view::npos ? "" : s.substr(colon + 1);
  const std::size_t comma = rest.find(',');
  std::string_view path = trim_spaces(rest.substr(0, comma));
  if (path.substr(0, 5) == "path=") path = trim_spaces(path.substr(5));
  if (path.empty()) {
    throw SpecError("strategy spec " + single_quoted(s) + " names no plug-in library (" +
                    std::string(kUsage) + ")");
  }
  ParsedSpec parsed;
  parsed.name = "plugin";
  parsed.params.emplace_back("path", std::string(path));
  if (comma == std::string_view::npos) return parsed;

  const std::string_view tail = trim_spaces(rest.substr(comma + 1));
  if (tail.empty()) {
    throw SpecError("strategy spec " + single_quoted(s) + " has an empty parameter (a stray ',')");
  }
  // The parameters after the path follow the ordinary syntax: let split_spec read them, and show
  // the user's own spec in its messages rather than the shortened one it was given.
  const std::string shortened = "plugin:" + std::string(tail);
  ParsedSpec others;
  try {
    others = split_spec(shortened);
  } catch (const SpecError& e) {
    std::string what = e.what();
    const std::size_t at = what.find(single_quoted(shortened));
    if (at != std::string::npos) what.replace(at, shortened.size() + 2, single_quoted(s));
    throw SpecError(what);
  }
  for (auto& [key, value] : others.params) {
    if (key == "path") {
      throw SpecError("strategy spec " + single_quoted(s) + ": the plug-in library is given twice");
    }
    parsed.params.emplace_back(std::move(key), std::move(value));
  }
  return parsed;
}

std::unique_ptr<Strategy> make_plugin_strategy(const StrategyParams& params, Upstream& upstream) {
  const std::optional<std::string> path = params.text("path");
  if (!path)
    throw SpecError(params.strategy() + ": no plug-in library given (" + std::string(kUsage) + ")");
  std::vector<std::pair<std::string, std::string>> own;
  for (const auto& [key, value] : params.all()) {
    if (key != "path") own.emplace_back(key, value);
  }
  return std::make_unique<PluginStrategy>(PluginLibrary::open(*path), own, upstream);
}

// ---- the library --------------------------------------------------------------------------------

std::shared_ptr<const PluginLibrary> PluginLibrary::open(const std::string& path) {
  const std::string shown = single_quoted(path);
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) {
    throw SpecError("plugin: cannot load " + shown + ": no such file");
  }
  if (std::filesystem::is_directory(status)) {
    throw SpecError("plugin: cannot load " + shown + ": it is a directory");
  }
  // With a '/' in the name dlopen() takes it as a path; without one it would search the library
  // path instead of the current directory.
  const std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) throw SpecError("plugin: cannot load " + shown + ": " + last_dl_error());
  std::shared_ptr<PluginLibrary> library(new PluginLibrary(path, handle));

  dlerror();  // clear any old error so that the one after dlsym() is dlsym()'s
  void* symbol = dlsym(handle, ALLOCLAB_PLUGIN_ENTRY_POINT);
  if (symbol == nullptr) {
    throw SpecError(
        "plugin: " + shown + " is not an alloclab strategy plug-in: it does not export " +
        ALLOCLAB_PLUGIN_ENTRY_POINT + " (" + last_dl_error() + "; see docs/plugins.md)");
  }
  using Entry = const alloclab_strategy_plugin* (*)();
  const Entry entry = reinterpret_cast<Entry>(symbol);
  const alloclab_strategy_plugin* table = entry();
  if (table == nullptr) {
    throw SpecError("plugin: " + shown + ": " + ALLOCLAB_PLUGIN_ENTRY_POINT + "() returned NULL");
  }
  // abi_version and struct_size are the first two members in every ABI version: safe to read.
  if (table->abi_version != ALLOCLAB_PLUGIN_ABI_VERSION) {
    throw SpecError("plugin " + shown + " was built for alloclab plugin ABI " +
                    std::to_string(table->abi_version) + "; this alloclab speaks " +
                    std::to_string(ALLOCLAB_PLUGIN_ABI_VERSION));
  }
  if (table->struct_size < kTableSizeV1) {
    throw SpecError("plugin " + shown + ": its table is " + std::to_string(table->struct_size) +
                    " bytes, smaller than the " + std::to_string(kTableSizeV1) +
                    " bytes of ABI 1 (struct_size must be sizeof(alloclab_strategy_plugin))");
  }
  if (table->name == nullptr || *table->name == '\0') {
    throw SpecError("plugin " + shown + ": its table has no name");
  }
  const std::string named = "plugin " + single_quoted(table->name) + " (" + path + ")";
  const RequiredFunction required[] = {
      {"create", table->create != nullptr},         {"allocate", table->allocate != nullptr},
      {"deallocate", table->deallocate != nullptr}, {"begin_run", table->begin_run != nullptr},
      {"end_run", table->end_run != nullptr},       {"release", table->release != nullptr},
      {"get_stats", table->get_stats != nullptr},   {"destroy", table->destroy != nullptr},
  };
  for (const RequiredFunction& f : required) {
    if (!f.present) {
      throw SpecError(named + ": its table has no '" + f.name + "' function (NULL)");
    }
  }
  library->table_ = table;
  library->name_ = table->name;
  library->summary_ = table->summary != nullptr ? table->summary : "";
  if (table->keys != nullptr) {
    library->keys_.emplace();
    for (const char* const* key = table->keys; *key != nullptr; ++key) {
      library->keys_->emplace_back(*key);
    }
  }
  return library;
}

PluginLibrary::~PluginLibrary() {
  dlclose(handle_);
}

// ---- the strategy -------------------------------------------------------------------------------

PluginStrategy::PluginStrategy(std::shared_ptr<const PluginLibrary> library,
                               const std::vector<std::pair<std::string, std::string>>& params,
                               Upstream& upstream)
    : library_(std::move(library)),
      table_(library_->table()),
      upstream_(upstream),
      upstream_bridge_{this, &bridge_allocate, &bridge_deallocate} {
  const std::string label = "plugin " + library_->name();
  const StrategyParams checked(label, params);
  if (library_->keys()) checked.check_keys(*library_->keys());

  std::vector<const char*> keys;
  std::vector<const char*> values;
  for (const auto& [key, value] : params) {
    keys.push_back(key.c_str());
    values.push_back(value.c_str());
  }
  char error[kErrorBufferSize] = {};
  self_ = table_.create(&upstream_bridge_, keys.data(), values.data(), params.size(), error,
                        sizeof error);
  error[sizeof error - 1] = '\0';
  if (self_ == nullptr) {
    pending_ = nullptr;  // create() refused; any upstream trouble is beside the point
    throw SpecError(label + ": " +
                    (error[0] != '\0' ? error : "create() failed and gave no reason"));
  }
  try {
    after_call();
  } catch (...) {
    table_.destroy(self_);  // no destructor runs for a constructor that throws
    throw;
  }
}

PluginStrategy::~PluginStrategy() {
  // destroy() must not call the upstream; if it did and that threw, there is no one to tell.
  in_call_ = "destroy";
  table_.destroy(self_);
}

std::optional<Block> PluginStrategy::allocate(std::uint64_t size, std::uint64_t stream) {
  alloclab_block out{0, 0};
  in_call_ = "allocate";
  const int status = table_.allocate(self_, size, stream, &out);
  after_call();
  if (status != 0) return std::nullopt;
  if (out.capacity < size) {
    throw std::logic_error(who() + " handed out a block of " + std::to_string(out.capacity) +
                           " bytes for a request of " + std::to_string(size) + " bytes");
  }
  return Block{out.address, out.capacity};
}

void PluginStrategy::deallocate(const Block& block) {
  in_call_ = "deallocate";
  table_.deallocate(self_, alloclab_block{block.address, block.capacity});
  after_call();
}

void PluginStrategy::begin_run() {
  in_call_ = "begin_run";
  table_.begin_run(self_);
  after_call();
}

void PluginStrategy::end_run() {
  in_call_ = "end_run";
  table_.end_run(self_);
  after_call();
}

void PluginStrategy::release() {
  in_call_ = "release";
  table_.release(self_);
  after_call();
}

std::string PluginStrategy::who() const {
  return "plugin " + single_quoted(library_->name()) + " (" + library_->path() + ")";
}

void PluginStrategy::after_call() {
  alloclab_strategy_stats c{};
  table_.get_stats(self_, &c);
  stats_ = StrategyStats{c.requests, c.hits, c.failed, c.evictions, c.slack_bytes, c.cached_bytes};
  if (pending_) std::rethrow_exception(std::exchange(pending_, nullptr));
}

int PluginStrategy::bridge_allocate(void* context, std::uint64_t bytes,
                                    alloclab_block* out) noexcept {
  auto* self = static_cast<PluginStrategy*>(context);
  if (self->pending_) return 1;  // the upstream already threw during this call: stop here
  try {
    if (const std::optional<Block> block = self->upstream_.allocate(bytes)) {
      self->held_.insert_or_assign(block->address, block->capacity);
      *out = alloclab_block{block->address, block->capacity};
      return 0;
    }
  } catch (...) {
    self->pending_ = std::current_exception();
  }
  return 1;
}

void PluginStrategy::bridge_deallocate(void* context, alloclab_block block) noexcept {
  auto* self = static_cast<PluginStrategy*>(context);
  try {
    const std::uint64_t* capacity = self->held_.find(block.address);
    if (capacity == nullptr || *capacity != block.capacity) {
      // Refused before the upstream sees it: the plug-in broke the rule, not the upstream.
      std::string what = self->who() + " gave back to the upstream, in its " + self->in_call_ +
                         "(), " + (capacity == nullptr ? "a block it does not hold" : "the block") +
                         " at " + hex_address(block.address) + " of " +
                         std::to_string(block.capacity) + " bytes";
      what += capacity == nullptr
                  ? " (it gave it back before, or never had it from the upstream)"
                  : ", which the upstream handed out with " + std::to_string(*capacity) + " bytes";
      throw std::logic_error(what);
    }
    self->held_.erase(block.address);
    self->upstream_.deallocate(Block{block.address, block.capacity});
  } catch (...) {
    if (!self->pending_) self->pending_ = std::current_exception();
  }
}

}  // namespace alloclab
