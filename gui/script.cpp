#include "script.hpp"

#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "app.hpp"
#include "ui_registry.hpp"

namespace alloclab::gui {
namespace {

constexpr std::size_t kOneOrMore = static_cast<std::size_t>(-1);

// verb -> number of arguments
const std::map<std::string, std::size_t>& verbs() {
  static const std::map<std::string, std::size_t> v = {
      {"open", 1},           {"drop", kOneOrMore},  {"view", 1},       {"click", 1},
      {"type", 2},           {"wait", 0},           {"frames", 1},     {"mouse", 2},
      {"mouse-on", 1},       {"wheel", 1},          {"export-csv", 1}, {"screenshot", 1},
      {"expect-message", 1}, {"expect-missing", 1}, {"expect-text", 2}};
  return v;
}

std::vector<std::string> split_words(const std::string& line, const std::string& where) {
  std::vector<std::string> words;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= line.size() || line[i] == '#') break;
    std::string word;
    if (line[i] == '"') {
      const std::size_t end = line.find('"', i + 1);
      if (end == std::string::npos) throw std::runtime_error(where + ": unterminated quote");
      word = line.substr(i + 1, end - i - 1);
      i = end + 1;
    } else {
      while (i < line.size() && line[i] != ' ' && line[i] != '\t') word += line[i++];
    }
    words.push_back(word);
  }
  return words;
}

int whole_number(const ScriptAction& a, std::size_t i, const std::string& name) {
  try {
    std::size_t used = 0;
    const int v = std::stoi(a.args[i], &used);
    if (used == a.args[i].size()) return v;
  } catch (const std::exception&) {
  }
  throw std::runtime_error(name + ":" + std::to_string(a.line) + ": '" + a.args[i] +
                           "' is not a whole number");
}

}  // namespace

std::vector<ScriptAction> parse_script(const std::string& text, const std::string& name) {
  std::vector<ScriptAction> actions;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::string where = name + ":" + std::to_string(number);
    std::vector<std::string> words = split_words(line, where);
    if (words.empty()) continue;
    const auto it = verbs().find(words[0]);
    if (it == verbs().end()) {
      std::string known;
      for (const auto& [v, n] : verbs()) known += (known.empty() ? "" : ", ") + v;
      throw std::runtime_error(where + ": unknown action '" + words[0] + "' (known: " + known +
                               ")");
    }
    if (it->second == kOneOrMore ? words.size() < 2 : words.size() - 1 != it->second)
      throw std::runtime_error(
          where + ": '" + words[0] + "' takes " +
          (it->second == kOneOrMore ? std::string("1 or more") : std::to_string(it->second)) +
          " argument(s), got " + std::to_string(words.size() - 1));
    ScriptAction action{words[0], std::vector<std::string>(words.begin() + 1, words.end()), number};
    if (action.verb == "frames" || action.verb == "wheel") whole_number(action, 0, name);
    if (action.verb == "mouse") {
      whole_number(action, 0, name);
      whole_number(action, 1, name);
    }
    if (action.verb == "view" && !parse_view(action.args[0]))
      throw std::runtime_error(where + ": unknown view '" + action.args[0] + "' (" + view_names() +
                               ")");
    actions.push_back(std::move(action));
  }
  return actions;
}

ScriptPlayer ScriptPlayer::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read the script");
  std::stringstream text;
  text << in.rdbuf();
  return ScriptPlayer(parse_script(text.str(), path), path);
}

std::vector<std::string> ScriptPlayer::inputs() const {
  std::vector<std::string> paths;
  for (const ScriptAction& a : actions_)
    if (a.verb == "open" || a.verb == "drop")
      paths.insert(paths.end(), a.args.begin(), a.args.end());
  return paths;
}

std::vector<ScriptPlayer::Output> ScriptPlayer::outputs() const {
  std::vector<Output> files;
  for (const ScriptAction& a : actions_)
    if (a.verb == "export-csv" || a.verb == "screenshot")
      files.push_back({name_ + ":" + std::to_string(a.line) + " " + a.verb, a.args[0]});
  return files;
}

void ScriptPlayer::fail(const ScriptAction& action, const std::string& what) {
  error_ = name_ + ":" + std::to_string(action.line) + ": " + what;
}

// A click as a user makes it: move there, hover, press for two frames, release. The widget is
// looked up again after the first move: the frame that ran the previous action may have moved
// it (a message that appeared, a list that grew). Returns true when done.
bool ScriptPlayer::click_step(const std::string& widget, ImGuiIO& io) {
  if (step_ <= 1) {
    const auto rect = find_item(widget);
    if (rect) mouse_ = ImVec2((rect->min.x + rect->max.x) / 2, (rect->min.y + rect->max.y) / 2);
  }
  io.MousePos = mouse_;
  io.MouseDown[0] = step_ == 2 || step_ == 3;
  return step_ >= 4;
}

void ScriptPlayer::before_frame(App& app, ImGuiIO& io) {
  if (mouse_.x >= 0) io.MousePos = mouse_;
  io.MouseDown[0] = false;
  if (finished()) return;
  const ScriptAction& a = actions_[next_];
  try {
    if (a.verb == "open") {
      app.open_paths({a.args[0]});
      advance();
    } else if (a.verb == "drop") {
      std::vector<const char*> paths;
      for (const std::string& p : a.args) paths.push_back(p.c_str());
      app.drop_files(static_cast<int>(paths.size()), paths.data());
      advance();
    } else if (a.verb == "view") {
      app.show_view(*parse_view(a.args[0]));
      if (step_++ >= 1) advance();  // one frame for the tab to switch
    } else if (a.verb == "click" || (a.verb == "type" && step_ < 5)) {
      if (step_ == 0 && !find_item(a.args[0])) {
        // Widgets appear once their data does (e.g. after a load): wait a little for them.
        if (++wait_frames_ > 120)
          fail(a, "no widget named '" + a.args[0] + "' (visible: " + registered_names() + ")");
        return;
      }
      wait_frames_ = 0;
      const bool done = click_step(a.args[0], io);
      ++step_;
      if (done && a.verb == "click") advance();
    } else if (a.verb == "type") {
      if (step_ == 5) io.AddInputCharactersUTF8(a.args[1].c_str());
      if (++step_ > 6) advance();
    } else if (a.verb == "wait") {
      if (step_++ > 0 && !app.busy()) advance();
    } else if (a.verb == "frames") {
      if (step_++ >= std::stoi(a.args[0])) advance();
    } else if (a.verb == "mouse") {
      mouse_ = ImVec2(std::stof(a.args[0]), std::stof(a.args[1]));
      io.MousePos = mouse_;
      advance();
    } else if (a.verb == "mouse-on") {
      const auto rect = find_item(a.args[0]);
      if (!rect) {
        if (++wait_frames_ > 120) fail(a, "no widget named '" + a.args[0] + "'");
        return;
      }
      mouse_ = ImVec2((rect->min.x + rect->max.x) / 2, (rect->min.y + rect->max.y) / 2);
      io.MousePos = mouse_;
      advance();
    } else if (a.verb == "wheel") {
      io.MouseWheel += static_cast<float>(std::stoi(a.args[0]));
      advance();
    } else if (a.verb == "export-csv") {
      app.export_csv(a.args[0]);
      advance();
    } else if (a.verb == "screenshot") {
      app.request_png(a.args[0]);
      advance();
    } else if (a.verb == "expect-message") {
      for (const std::string& m : app.model.messages)
        if (m.find(a.args[0]) != std::string::npos) {
          advance();
          return;
        }
      if (++wait_frames_ > 600) {
        std::string shown;
        for (const std::string& m : app.model.messages) shown += (shown.empty() ? "" : "; ") + m;
        fail(a, "no message contains '" + a.args[0] + "' (messages: " + shown + ")");
      }
    } else if (a.verb == "expect-text") {
      // What is on screen may come a few frames late (a background replay): wait for it.
      const std::optional<std::string> text = find_text(a.args[0]);
      if (text && text->find(a.args[1]) != std::string::npos) {
        advance();
      } else if (++wait_frames_ > 600) {
        fail(a, text ? "'" + a.args[0] + "' shows '" + *text + "', which lacks '" + a.args[1] + "'"
                     : "nothing named '" + a.args[0] +
                           "' shows a text (texts: " + registered_text_names() + ")");
      }
    } else if (a.verb == "expect-missing") {
      if (find_item(a.args[0]))
        fail(a, "'" + a.args[0] + "' is on screen");
      else
        advance();
    }
  } catch (const std::exception& e) {
    fail(a, e.what());
  }
}

}  // namespace alloclab::gui
