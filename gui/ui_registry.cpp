#include "ui_registry.hpp"

namespace alloclab::gui {
namespace {

std::map<std::string, ItemRect> g_current;
std::map<std::string, std::string> g_texts;

std::string quoted_names(const auto& map) {
  std::string out;
  for (const auto& entry : map) {
    if (!out.empty()) out += ", ";
    out += "'" + entry.first + "'";
  }
  return out;
}

std::string visible_label(const std::string& label) {
  const auto hash = label.find("##");
  return hash == std::string::npos ? label : label.substr(0, hash);
}

}  // namespace

void track_item(const std::string& name) {
  g_current[visible_label(name)] = ItemRect{ImGui::GetItemRectMin(), ImGui::GetItemRectMax()};
}

void track_rect(const std::string& name, ImVec2 min, ImVec2 max) {
  g_current[visible_label(name)] = ItemRect{min, max};
}

void track_text(const std::string& name, std::string text) {
  g_texts[name] = std::move(text);
}

void begin_registry_frame() {
  g_current.clear();
  g_texts.clear();
}

// Scripts look up between frames, when g_current holds the frame just drawn.
std::optional<ItemRect> find_item(const std::string& name) {
  if (auto it = g_current.find(name); it != g_current.end()) return it->second;
  return std::nullopt;
}

std::optional<std::string> find_text(const std::string& name) {
  if (auto it = g_texts.find(name); it != g_texts.end()) return it->second;
  return std::nullopt;
}

std::string registered_names() {
  return quoted_names(g_current);
}

std::string registered_text_names() {
  return quoted_names(g_texts);
}

bool named_button(const char* label, ImVec2 size) {
  const bool pressed = ImGui::Button(label, size);
  track_item(label);
  return pressed;
}

}  // namespace alloclab::gui
