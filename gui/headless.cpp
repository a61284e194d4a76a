#include "headless.hpp"

#include <cstdio>
#include <stdexcept>

#define GL_GLEXT_PROTOTYPES 1
#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GL/gl.h>
#include <GL/glext.h>

namespace alloclab::gui {
namespace {

[[noreturn]] void egl_fail(const char* what) {
  char code[32];
  std::snprintf(code, sizeof code, "0x%04X", static_cast<unsigned>(eglGetError()));
  throw std::runtime_error(std::string("headless rendering: ") + what + " (EGL error " + code +
                           "; needs Mesa's EGL: apt-get install libegl1 libgl1-mesa-dri)");
}

}  // namespace

HeadlessGl::HeadlessGl(int width, int height) : width_(width), height_(height) {
  auto get_platform_display = reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(
      eglGetProcAddress("eglGetPlatformDisplayEXT"));
  if (!get_platform_display) egl_fail("eglGetPlatformDisplayEXT is missing");
  EGLDisplay display =
      get_platform_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr);
  if (display == EGL_NO_DISPLAY) egl_fail("no surfaceless EGL display");
  EGLint major = 0, minor = 0;
  if (!eglInitialize(display, &major, &minor)) egl_fail("eglInitialize failed");
  display_ = display;
  if (!eglBindAPI(EGL_OPENGL_API)) egl_fail("eglBindAPI(OpenGL) failed");
  const EGLint config_attribs[] = {EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT, EGL_SURFACE_TYPE, 0,
                                   EGL_NONE};
  EGLConfig config = nullptr;
  EGLint count = 0;
  // Without a matching config, EGL_KHR_no_config_context lets the context go without one.
  if (!eglChooseConfig(display, config_attribs, &config, 1, &count) || count == 0)
    config = EGL_NO_CONFIG_KHR;
  const EGLint context_attribs[] = {EGL_CONTEXT_MAJOR_VERSION,
                                    3,
                                    EGL_CONTEXT_MINOR_VERSION,
                                    3,
                                    EGL_CONTEXT_OPENGL_PROFILE_MASK,
                                    EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT,
                                    EGL_NONE};
  EGLContext context = eglCreateContext(display, config, EGL_NO_CONTEXT, context_attribs);
  if (context == EGL_NO_CONTEXT) egl_fail("cannot create an OpenGL 3.3 core context");
  context_ = context;
  if (!eglMakeCurrent(display, EGL_NO_SURFACE, EGL_NO_SURFACE, context))
    egl_fail("eglMakeCurrent failed");

  glGenFramebuffers(1, &framebuffer_);
  glGenRenderbuffers(1, &color_);
  glBindRenderbuffer(GL_RENDERBUFFER, color_);
  glRenderbufferStorage(GL_RENDERBUFFER, GL_RGBA8, width, height);
  glBindFramebuffer(GL_FRAMEBUFFER, framebuffer_);
  glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, color_);
  if (glCheckFramebufferStatus(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE)
    throw std::runtime_error("headless rendering: the offscreen framebuffer is incomplete");
}

HeadlessGl::~HeadlessGl() {
  if (framebuffer_) glDeleteFramebuffers(1, &framebuffer_);
  if (color_) glDeleteRenderbuffers(1, &color_);
  if (display_) {
    eglMakeCurrent(display_, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    if (context_) eglDestroyContext(display_, context_);
    eglTerminate(display_);
  }
}

void HeadlessGl::bind() const {
  glBindFramebuffer(GL_FRAMEBUFFER, framebuffer_);
  glViewport(0, 0, width_, height_);
}

std::string HeadlessGl::renderer() const {
  const auto* text = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
  return text ? text : "unknown";
}

}  // namespace alloclab::gui
