#pragma once
// Where the named widgets of the last frame were, so that a script can click them by name the
// way a user would (move the mouse there, press, release) and the same UI code runs with and
// without a script. Widgets register themselves right after they are submitted.
#include <map>
#include <optional>
#include <string>

#include <imgui.h>

namespace alloclab::gui {

struct ItemRect {
  ImVec2 min, max;
};

// Records the last submitted item's rectangle under `name` (its label without any "##id"
// suffix when `name` is a label).
void track_item(const std::string& name);
// Records `name` with an explicit rectangle (items whose rectangle ImGui does not leave as the
// last item, e.g. a menu bar entry once its menu is open).
void track_rect(const std::string& name, ImVec2 min, ImVec2 max);
// Starts a new frame's registry (the UI calls it first thing in a frame).
void begin_registry_frame();
// The rectangle `name` had in the frame drawn last (call between frames).
std::optional<ItemRect> find_item(const std::string& name);
// Names registered in the frame drawn last (for error messages).
std::string registered_names();

// Records the text `name` shows in this frame (a line of a view, the tooltip), so that a script
// can check what is on screen (`expect-text`). Chart::tooltip records its lines as "tooltip".
void track_text(const std::string& name, std::string text);
// The text `name` showed in the frame drawn last.
std::optional<std::string> find_text(const std::string& name);
// Names with a text in the frame drawn last (for error messages).
std::string registered_text_names();

// ImGui::Button / InputText etc. that register themselves.
bool named_button(const char* label, ImVec2 size = ImVec2(0, 0));

}  // namespace alloclab::gui
