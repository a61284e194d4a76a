#include "runner.hpp"

#include <GL/gl.h>
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <thread>

#include <time.h>

#include "app.hpp"
#include "gl_output.hpp"
#include "headless.hpp"
#include "script.hpp"

namespace alloclab::gui {
namespace {

using Clock = std::chrono::steady_clock;

// Applies the command line to a new App: files to open, specs to add, the first view.
void set_up(App& app, const RunOptions& o) {
  for (const std::string& spec : o.specs)
    if (std::string message = app.add_spec(spec); !message.empty())
      throw std::invalid_argument("strategy '" + spec + "': " + message);
  if (!o.view.empty()) {
    const auto view = parse_view(o.view);
    if (!view) throw std::invalid_argument("unknown view '" + o.view + "' (" + view_names() + ")");
    app.show_view(*view);
  }
  app.open_paths(o.files);
}

// After loading, replays the command line's specs on the first trace once.
struct AutoReplay {
  bool pending;
  void step(App& app) {
    if (!pending || app.busy()) return;
    pending = false;
    if (!app.model.traces.empty()) {
      app.model.current_trace = 0;
      app.run_replay();
    }
  }
};

void write_requested(const std::vector<std::string>& paths, int w, int h) {
  if (paths.empty()) return;
  const auto pixels = read_pixels(w, h);
  for (const std::string& p : paths) write_png(p, w, h, pixels);
}

// Per frame: wall time of the whole frame, CPU time of our UI code building the draw lists
// (ImGui::NewFrame .. ImGui::Render, no GL), and wall time of the GL part (upload, draw,
// glFinish: with llvmpipe, the software rasterizer).
struct FrameTimes {
  std::vector<double> frame, ui, gl;
  std::size_t triangles = 0, vertices = 0;  // of the last frame
  double area = 0;  // pixels covered by its triangles, summed (overlaps and clipping ignored)
};

double triangle_area(const ImDrawData& data) {
  double area = 0;
  for (int n = 0; n < data.CmdListsCount; ++n) {
    const ImDrawList& list = *data.CmdLists[n];
    for (const ImDrawCmd& cmd : list.CmdBuffer) {
      if (cmd.UserCallback) continue;
      for (unsigned i = 0; i + 2 < cmd.ElemCount; i += 3) {
        const ImVec2& a = list.VtxBuffer[static_cast<int>(cmd.VtxOffset) +
                                         list.IdxBuffer[static_cast<int>(cmd.IdxOffset + i)]]
                              .pos;
        const ImVec2& b = list.VtxBuffer[static_cast<int>(cmd.VtxOffset) +
                                         list.IdxBuffer[static_cast<int>(cmd.IdxOffset + i + 1)]]
                              .pos;
        const ImVec2& c = list.VtxBuffer[static_cast<int>(cmd.VtxOffset) +
                                         list.IdxBuffer[static_cast<int>(cmd.IdxOffset + i + 2)]]
                              .pos;
        area +=
            std::abs(static_cast<double>((b.x - a.x) * (c.y - a.y) - (c.x - a.x) * (b.y - a.y))) /
            2;
      }
    }
  }
  return area;
}

double mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

void print_frame_times(const FrameTimes& t) {
  if (t.frame.empty()) return;
  const std::vector<double>& ms = t.frame;
  std::printf(
      "frame time over %zu frames: mean %.2f ms, p50 %.2f ms, p99 %.2f ms, max %.2f ms (%.0f fps "
      "at the mean)\n",
      ms.size(), mean(ms), quantile(ms, 0.5), quantile(ms, 0.99), quantile(ms, 1.0),
      1000.0 / mean(ms));
  std::printf(
      "  ui (ImGui::NewFrame..Render, CPU time of this thread): mean %.2f ms, p50 %.2f ms\n"
      "  gl (draw + glFinish, the rasterizer): mean %.2f ms, p50 %.2f ms\n"
      "  draw data: %zu triangles, %zu vertices, %.2f M pixels of triangles per frame\n",
      mean(t.ui), quantile(t.ui, 0.5), mean(t.gl), quantile(t.gl, 0.5), t.triangles, t.vertices,
      t.area / 1e6);
}

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// Errors the model collected (failed loads) make a headless run fail: a screenshot of an error
// is not what anyone asked for.
int report_model_errors(const App& app) {
  int status = 0;
  for (const std::string& m : app.model.messages)
    if (m.rfind("error: ", 0) == 0) {
      std::fprintf(stderr, "alloclab gui: %s\n", m.c_str());
      status = 2;
    }
  return status;
}

}  // namespace

int run_headless(const RunOptions& o) {
  HeadlessGl gl(o.width, o.height);
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  ImGui::StyleColorsDark();
  ImGui_ImplOpenGL3_Init("#version 330 core");
  int status = 0;
  {
    App app;
    set_up(app, o);
    std::optional<ScriptPlayer> script;
    if (!o.script.empty()) script = ScriptPlayer::load(o.script);
    AutoReplay auto_replay{!o.specs.empty()};
    const ImVec2 size(static_cast<float>(o.width), static_cast<float>(o.height));
    FrameTimes times;
    bool timing = false;
    auto frame = [&] {
      io.DisplaySize = size;
      io.DeltaTime = 1.0f / 60;
      if (script) script->before_frame(app, io);
      const std::vector<std::string> pngs = std::move(app.png_requests);
      app.png_requests.clear();
      ImGui_ImplOpenGL3_NewFrame();
      const double ui0 = thread_cpu_ms();
      ImGui::NewFrame();
      app.frame(size);
      ImGui::Render();
      const double ui1 = thread_cpu_ms();
      const auto gl0 = Clock::now();
      gl.bind();
      const ImVec4 clear = clear_color();
      glClearColor(clear.x, clear.y, clear.z, 1);
      glClear(GL_COLOR_BUFFER_BIT);
      ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
      glFinish();
      if (timing) {
        times.ui.push_back(ui1 - ui0);
        times.gl.push_back(std::chrono::duration<double, std::milli>(Clock::now() - gl0).count());
      }
      write_requested(pngs, o.width, o.height);
    };
    const auto deadline = Clock::now() + std::chrono::minutes(10);
    // Until every load and replay has finished and the script has run.
    for (int n = 0;; ++n) {
      auto_replay.step(app);
      const bool busy = app.busy() || auto_replay.pending;
      if (!busy && (!script || script->finished()) && n >= 2) break;
      if (Clock::now() > deadline)
        throw std::runtime_error("gave up waiting for loads and replays after 10 minutes");
      frame();
      // Leave the cores to the background work instead of redrawing a progress bar flat out.
      if (busy && !script) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (script && !script->error().empty()) {
      std::fprintf(stderr, "alloclab gui: %s\n", script->error().c_str());
      status = 1;
    }
    timing = o.frame_times;
    for (int i = 0; i < std::max(o.frames, 3); ++i) {
      const auto t0 = Clock::now();
      frame();
      times.frame.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    timing = false;
    if (o.frame_times) {
      // The last frame's draw data, still current.
      const ImDrawData& last = *ImGui::GetDrawData();
      times.triangles = static_cast<std::size_t>(last.TotalIdxCount / 3);
      times.vertices = static_cast<std::size_t>(last.TotalVtxCount);
      times.area = triangle_area(last);
      std::printf("renderer: %s, %dx%d\n", gl.renderer().c_str(), o.width, o.height);
      print_frame_times(times);
    }
    if (!o.screenshot.empty()) {
      app.request_png(o.screenshot);
      frame();
    }
    if (status == 0) status = report_model_errors(app);
  }
  ImGui_ImplOpenGL3_Shutdown();
  ImGui::DestroyContext();
  return status;
}

int run_window(const RunOptions& o) {
  glfwSetErrorCallback([](int code, const char* text) {
    std::fprintf(stderr, "alloclab gui: GLFW error %d: %s\n", code, text);
  });
  if (!glfwInit()) {
    std::fprintf(
        stderr,
        "alloclab gui: cannot open a window (no display?); --headless renders without one\n");
    return 2;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  GLFWwindow* window = glfwCreateWindow(o.width, o.height, "alloclab", nullptr, nullptr);
  if (!window) {
    glfwTerminate();
    std::fprintf(stderr, "alloclab gui: cannot create an OpenGL 3.3 window\n");
    return 2;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(o.frames > 0 ? 0 : 1);
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  ImGui::StyleColorsDark();
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330 core");
  int status = 0;
  {
    App app;
    set_up(app, o);
    glfwSetWindowUserPointer(window, &app);
    glfwSetDropCallback(window, [](GLFWwindow* w, int count, const char** paths) {
      static_cast<App*>(glfwGetWindowUserPointer(w))->drop_files(count, paths);
    });
    std::optional<ScriptPlayer> script;
    if (!o.script.empty()) script = ScriptPlayer::load(o.script);
    AutoReplay auto_replay{!o.specs.empty()};
    bool screenshot_taken = o.screenshot.empty();
    for (int n = 0; !glfwWindowShouldClose(window) && !app.quit_requested; ++n) {
      auto_replay.step(app);
      const bool busy = app.busy() || auto_replay.pending || (script && !script->finished());
      if (busy || o.frames > 0)
        glfwPollEvents();
      else
        glfwWaitEventsTimeout(0.1);  // idle: wake for input, drops and a slow redraw
      const bool settled = !busy && n > 3;
      if (settled && !screenshot_taken) {
        app.request_png(o.screenshot);
        screenshot_taken = true;
      }
      ImGui_ImplOpenGL3_NewFrame();
      ImGui_ImplGlfw_NewFrame();
      if (script) script->before_frame(app, io);
      const std::vector<std::string> pngs = std::move(app.png_requests);
      app.png_requests.clear();
      ImGui::NewFrame();
      app.frame(io.DisplaySize);
      ImGui::Render();
      int w = 0, h = 0;
      glfwGetFramebufferSize(window, &w, &h);
      glViewport(0, 0, w, h);
      const ImVec4 clear = clear_color();
      glClearColor(clear.x, clear.y, clear.z, 1);
      glClear(GL_COLOR_BUFFER_BIT);
      ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
      if (!pngs.empty()) {
        glReadBuffer(GL_BACK);
        write_requested(pngs, w, h);
      }
      glfwSwapBuffers(window);
      if (o.frames > 0 && n + 1 >= o.frames && settled && screenshot_taken && pngs.empty()) break;
    }
    if (script && !script->error().empty()) {
      std::fprintf(stderr, "alloclab gui: %s\n", script->error().c_str());
      status = 1;
    }
    if (status == 0 && o.frames > 0) status = report_model_errors(app);
  }
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return status;
}

}  // namespace alloclab::gui
