// A minimal SVG writer: just what poet's pictures draw.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace poet::report {

std::string escape_xml(std::string_view text);

class Svg {
 public:
  Svg(double width, double height);
  void rect(double x, double y, double w, double h, std::string_view fill, std::string_view css_class = {},
            std::string_view tooltip = {});
  void line(double x1, double y1, double x2, double y2, std::string_view stroke, double width = 1,
            std::string_view dash = {});
  void text(double x, double y, std::string_view content, double size = 12, std::string_view anchor = "start",
            std::string_view extra = {});
  void path(std::string_view d, std::string_view stroke, double width, std::string_view fill = "none");
  std::string finish();

 private:
  std::string out_;
};

// Round steps (1, 2, 5 x 10^k) so that about `count` ticks cover `span`.
double nice_step(double span, int count);

}  // namespace poet::report
