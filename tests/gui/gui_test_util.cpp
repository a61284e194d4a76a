#include "gui_test_util.hpp"

#include <fstream>
#include <set>
#include <vector>

#include <stb_image.h>

namespace alloclab::test {

Image load_png(const std::string& path) {
  Image image;
  int channels = 0;
  unsigned char* data = stbi_load(path.c_str(), &image.width, &image.height, &channels, 3);
  if (!data) return image;
  image.rgb.assign(data, data + static_cast<std::size_t>(image.width) *
                                    static_cast<std::size_t>(image.height) * 3);
  stbi_image_free(data);
  return image;
}

std::size_t distinct_colors(const Image& image, int x0, int y0, int x1, int y1) {
  std::set<std::uint32_t> colors;
  for (int y = y0; y < y1 && y < image.height; ++y)
    for (int x = x0; x < x1 && x < image.width; ++x) {
      const std::uint8_t* p = image.at(x, y);
      colors.insert(static_cast<std::uint32_t>(p[0]) << 16 | static_cast<std::uint32_t>(p[1]) << 8 |
                    p[2]);
    }
  return colors.size();
}

std::map<std::string, std::map<std::string, std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::vector<std::string> header;
  std::map<std::string, std::map<std::string, std::string>> rows;
  auto split = [](const std::string& text) {
    std::vector<std::string> fields;
    std::string field;
    bool quoted = false;
    for (char c : text) {
      if (c == '"')
        quoted = !quoted;
      else if (c == ',' && !quoted) {
        fields.push_back(field);
        field.clear();
      } else
        field += c;
    }
    fields.push_back(field);
    return fields;
  };
  if (std::getline(in, line)) header = split(line);
  while (std::getline(in, line)) {
    const auto fields = split(line);
    for (std::size_t i = 0; i < fields.size() && i < header.size(); ++i)
      rows[fields[0]][header[i]] = fields[i];
  }
  return rows;
}

}  // namespace alloclab::test
