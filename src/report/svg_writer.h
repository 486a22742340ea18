// A minimal SVG writer: just the elements poet's pictures draw. Every method appends one
// complete element, so the output is well-formed by construction (groups must be closed by
// the caller: begin_group / end_group in pairs).
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace poet::report {

// Escapes the five XML special characters (node names may contain any of them).
std::string escape_xml(std::string_view text);

class Svg {
 public:
  Svg(double width, double height);
  // `extra` is raw attribute text ("opacity=\"0.5\""); `tooltip` becomes a <title> child.
  void rect(double x, double y, double w, double h, std::string_view fill, std::string_view css_class = {},
            std::string_view tooltip = {}, std::string_view extra = {});
  void line(double x1, double y1, double x2, double y2, std::string_view stroke, double width = 1,
            std::string_view dash = {});
  void text(double x, double y, std::string_view content, double size = 12, std::string_view anchor = "start",
            std::string_view extra = {});
  void path(std::string_view d, std::string_view stroke, double width, std::string_view fill = "none",
            std::string_view extra = {});
  void circle(double cx, double cy, double r, std::string_view fill);
  // A clip region usable as clip-path="url(#id)".
  void clip_rect(std::string_view id, double x, double y, double w, double h);
  void begin_group(std::string_view attributes);
  void end_group();
  std::string finish();

 private:
  std::string out_;
};

// Round steps (1, 2, 5 x 10^k) so that about `count` ticks cover `span`.
double nice_step(double span, int count);

}  // namespace poet::report
