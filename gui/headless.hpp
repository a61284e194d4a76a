#pragma once
// Offscreen rendering without any display server: EGL on Mesa's surfaceless platform, an OpenGL
// 3.3 core context and a framebuffer object to draw into.
#include <string>

namespace alloclab::gui {

class HeadlessGl {
 public:
  // Throws std::runtime_error saying which step failed (no EGL, no surfaceless platform, ...).
  HeadlessGl(int width, int height);
  ~HeadlessGl();
  HeadlessGl(const HeadlessGl&) = delete;
  HeadlessGl& operator=(const HeadlessGl&) = delete;
  // Binds the framebuffer for drawing and reading.
  void bind() const;
  int width() const { return width_; }
  int height() const { return height_; }
  // GL_RENDERER, e.g. "llvmpipe (LLVM 15.0.6, 256 bits)".
  std::string renderer() const;

 private:
  int width_, height_;
  void* display_ = nullptr;
  void* context_ = nullptr;
  unsigned framebuffer_ = 0, color_ = 0;
};

}  // namespace alloclab::gui
