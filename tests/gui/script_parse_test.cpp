#include <gtest/gtest.h>

#include "gui/app.hpp"
#include "gui/script.hpp"

namespace alloclab::gui {
namespace {

std::string parse_error(const std::string& text) {
  try {
    parse_script(text, "s.txt");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(ScriptParse, actions_with_quoted_arguments_and_comments) {
  const auto actions = parse_script(
      "# a session\nopen traces/tiny.csv\n\ntype spec \"fifo-shrink:max=16MiB, match=best-fit\"  # "
      "two\n"
      "click Run\nwait\nview memory\nframes 3\nexport-csv out.csv\n",
      "s.txt");
  ASSERT_EQ(actions.size(), 7u);
  EXPECT_EQ(actions[1].verb, "type");
  EXPECT_EQ(actions[1].args,
            (std::vector<std::string>{"spec", "fifo-shrink:max=16MiB, match=best-fit"}));
  EXPECT_EQ(actions[1].line, 4);
  EXPECT_EQ(actions[4].args[0], "memory");
}

TEST(ScriptParse, drop_takes_one_or_more_files_and_expectations_take_one_argument) {
  const auto actions = parse_script(
      "drop a.alt \"b c.json\"\ndrop d.csv\nexpect-message \"replay of a.alt cancelled\"\n"
      "expect-missing report:0\n",
      "s.txt");
  ASSERT_EQ(actions.size(), 4u);
  EXPECT_EQ(actions[0].args, (std::vector<std::string>{"a.alt", "b c.json"}));
  EXPECT_EQ(actions[1].args, (std::vector<std::string>{"d.csv"}));
  EXPECT_EQ(actions[2].args[0], "replay of a.alt cancelled");
  EXPECT_EQ(actions[3].verb, "expect-missing");
  EXPECT_EQ(parse_error("drop\n"), "s.txt:1: 'drop' takes 1 or more argument(s), got 0");
  EXPECT_EQ(parse_error("expect-missing a b\n"),
            "s.txt:1: 'expect-missing' takes 1 argument(s), got 2");
}

TEST(ScriptParse, expect_text_takes_a_name_and_the_text_to_find) {
  const auto actions = parse_script(
      "view memory\nexpect-text chart:segments/0/totals \"reserved 22.00 MiB\"\n", "s.txt");
  ASSERT_EQ(actions.size(), 2u);
  EXPECT_EQ(actions[1].verb, "expect-text");
  EXPECT_EQ(actions[1].args,
            (std::vector<std::string>{"chart:segments/0/totals", "reserved 22.00 MiB"}));
  EXPECT_EQ(parse_error("expect-text tooltip\n"),
            "s.txt:1: 'expect-text' takes 2 argument(s), got 1");
}

TEST(ScriptParse, errors_name_the_file_and_line) {
  EXPECT_EQ(parse_error("open a\nclik Run\n").rfind("s.txt:2: unknown action 'clik'", 0), 0u);
  EXPECT_EQ(parse_error("click\n"), "s.txt:1: 'click' takes 1 argument(s), got 0");
  EXPECT_EQ(parse_error("\n\nview memroy\n").rfind("s.txt:3: unknown view 'memroy'", 0), 0u);
  EXPECT_EQ(parse_error("frames many\n"), "s.txt:1: 'many' is not a whole number");
  EXPECT_EQ(parse_error("type spec \"exact\n"), "s.txt:1: unterminated quote");
}

TEST(SpecEditor, validation_uses_the_strategy_registry) {
  EXPECT_EQ(validate_spec("fifo-shrink:max=64MiB"), "");
  EXPECT_NE(validate_spec("fifo-shrink:max=lots"), "");
  EXPECT_NE(validate_spec("no-such-strategy"), "");
  EXPECT_NE(validate_spec("exact:bogus=1").find("bogus"), std::string::npos);
  EXPECT_EQ(validate_spec("  "), "empty spec");
  for (const std::string& preset : spec_presets()) EXPECT_EQ(validate_spec(preset), "") << preset;
  EXPECT_NE(spec_hint("fifo-shrink:").find("max"), std::string::npos);
  EXPECT_NE(spec_hint("zzz").find("exact"), std::string::npos);
}

}  // namespace
}  // namespace alloclab::gui
