#pragma once
// The help text of every command, as a person reads it: `--stacks[=N]`, `-j,--jobs N`,
// `--json FILE`, a default said in words. CLI11's own shows its internals instead: a flag's
// default in braces (`--stacks{10}`), the names of validators after the type
// (`UINT:NOT_NEGATIVE`, `UINT:(UINT in [1 - 1073741824]) AND (POWER_OF_TWO)`), `=cnn` after it.
#include <CLI/CLI.hpp>

#include <memory>
#include <string>

namespace alloclab::cli {

// `app.formatter(std::make_shared<HelpFormatter>())` before adding subcommands (they take their
// parent's formatter when added). Header-only: `alloclab` and `alloclab-gui` both use it.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* option, bool is_positional) const override;
  std::string make_option_opts(const CLI::Option* option) const override;
  std::string make_option_desc(const CLI::Option* option) const override;
};

// The placeholder for an option's value: the type name the option was given (FILE, SPEC, ...)
// without any validator's name, or N for CLI11's integer types, NUMBER for its floating point.
std::string value_placeholder(const CLI::Option& option);

// ---- implementation ---------------------------------------------------------------------------

namespace help_detail {

// A flag that also takes a value (`--stacks` or `--stacks=N`): CLI11 writes its default into
// the name, in braces.
inline bool is_flag_with_value(const CLI::Option& option) {
  return !option.get_fnames().empty();
}

inline std::string without_braces(const std::string& names) {
  std::string out;
  bool inside = false;
  for (const char c : names) {
    if (c == '{') inside = true;
    if (!inside) out += c;
    if (c == '}') inside = false;
  }
  return out;
}

}  // namespace help_detail

inline std::string value_placeholder(const CLI::Option& option) {
  std::string type = option.get_type_name();
  type = type.substr(0, type.find(':'));  // what follows ':' names the validators
  if (type == "UINT" || type == "INT") return "N";
  if (type == "FLOAT") return "NUMBER";
  if (type == "TEXT") return "VALUE";
  return type;
}

inline std::string HelpFormatter::make_option_name(const CLI::Option* option,
                                                   bool is_positional) const {
  if (is_positional) return option->get_name(true, false);
  const std::string names = option->get_name(false, true);
  if (!help_detail::is_flag_with_value(*option)) return names;
  // Every name of such a flag takes the value the same way: shown once, after the last name.
  return help_detail::without_braces(names) + "[=" + value_placeholder(*option) + "]";
}

inline std::string HelpFormatter::make_option_opts(const CLI::Option* option) const {
  if (!option->get_option_text().empty()) return " " + option->get_option_text();
  std::string out;
  // Flags take no value (or show it in their name); a positional is named by its own name.
  const bool takes_value = option->get_type_size() != 0 && option->get_expected_max() != 0 &&
                           !help_detail::is_flag_with_value(*option);
  if (takes_value && option->nonpositional()) out += " " + value_placeholder(*option);
  if (takes_value && option->get_expected_max() == CLI::detail::expected_max_vector_size)
    out += " ...";
  if (option->get_required()) out += " (required)";
  return out;
}

inline std::string HelpFormatter::make_option_desc(const CLI::Option* option) const {
  std::string description = option->get_description();
  const std::string value = option->get_default_str();
  if (value.empty() || help_detail::is_flag_with_value(*option) ||
      description.find("default") != std::string::npos)
    return description;
  // "number of runs (forward passes; default 10)", not "... (forward passes) (default 10)".
  if (!description.empty() && description.back() == ')') {
    description.insert(description.size() - 1, "; default " + value);
    return description;
  }
  return description + " (default " + value + ")";
}

}  // namespace alloclab::cli
