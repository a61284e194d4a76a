#pragma once
// What both backends do with a rendered frame: read it back and write a PNG.
#include <cstdint>
#include <string>
#include <vector>

namespace alloclab::gui {

// RGBA rows of the bound read framebuffer, top row first.
std::vector<std::uint8_t> read_pixels(int width, int height);
// Throws std::runtime_error when the file cannot be written.
void write_png(const std::string& path, int width, int height,
               const std::vector<std::uint8_t>& rgba);

}  // namespace alloclab::gui
