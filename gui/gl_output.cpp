#include "gl_output.hpp"

#include <algorithm>
#include <stdexcept>

#include <GL/gl.h>
#include <stb_image_write.h>

namespace alloclab::gui {

std::vector<std::uint8_t> read_pixels(int width, int height) {
  const auto w = static_cast<std::size_t>(width), h = static_cast<std::size_t>(height);
  std::vector<std::uint8_t> pixels(w * h * 4);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  // GL's rows start at the bottom; PNG's at the top.
  std::vector<std::uint8_t> flipped(pixels.size());
  for (std::size_t y = 0; y < h; ++y)
    std::copy_n(pixels.begin() + static_cast<std::ptrdiff_t>((h - 1 - y) * w * 4), w * 4,
                flipped.begin() + static_cast<std::ptrdiff_t>(y * w * 4));
  for (std::size_t i = 3; i < flipped.size(); i += 4) flipped[i] = 255;  // opaque
  return flipped;
}

void write_png(const std::string& path, int width, int height,
               const std::vector<std::uint8_t>& rgba) {
  if (!stbi_write_png(path.c_str(), width, height, 4, rgba.data(), width * 4))
    throw std::runtime_error("cannot write " + path);
}

}  // namespace alloclab::gui
