#pragma once
// Running alloclab-gui headless from tests and looking at the PNGs it writes.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tests/cli/cli_test_util.hpp"

namespace alloclab::test {

struct Image {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgb;  // 3 bytes per pixel, top row first
  bool empty() const { return rgb.empty(); }
  const std::uint8_t* at(int x, int y) const {
    return &rgb[(static_cast<std::size_t>(y) * static_cast<std::size_t>(width) +
                 static_cast<std::size_t>(x)) *
                3];
  }
};

Image load_png(const std::string& path);

// Distinct colours in a rectangle (a blank or flat image has one or two).
std::size_t distinct_colors(const Image& image, int x0, int y0, int x1, int y1);
// Pixels in a rectangle for which `match(r, g, b)` holds.
template <typename F>
std::size_t count_pixels(const Image& image, int x0, int y0, int x1, int y1, F match) {
  std::size_t n = 0;
  for (int y = y0; y < y1 && y < image.height; ++y)
    for (int x = x0; x < x1 && x < image.width; ++x) {
      const std::uint8_t* p = image.at(x, y);
      if (match(p[0], p[1], p[2])) ++n;
    }
  return n;
}

// Rows of a CSV (as the GUI exports it) whose first column is a quoted strategy spec, by spec:
// column name -> field.
std::map<std::string, std::map<std::string, std::string>> read_csv(const std::string& path);

inline std::string gui_program() {
  return ALLOCLAB_GUI_PROGRAM;
}
inline std::string traces_dir() {
  return ALLOCLAB_TRACES_DIR;
}
inline std::string golden(const std::string& name) {
  return std::string(ALLOCLAB_TEST_DATA) + "/golden/" + name;
}

// A fresh directory for one test's outputs.
inline std::filesystem::path scratch_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("alloclab-gui-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Runs alloclab-gui --headless with `args`.
inline CliResult run_headless(const std::string& args) {
  return run_shell(gui_program() + " --headless " + args);
}
// True when the program said this machine cannot render offscreen at all (no EGL / Mesa).
inline bool cannot_render(const CliResult& r) {
  return r.status == 2 && r.output.find("headless rendering:") != std::string::npos;
}

}  // namespace alloclab::test

// Skips the test, with the reason, when the machine cannot render offscreen.
#define ALLOCLAB_SKIP_WITHOUT_RENDERING(result) \
  if (::alloclab::test::cannot_render(result))  \
  GTEST_SKIP() << "no offscreen rendering here: " << (result).output
