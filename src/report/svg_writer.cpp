#include "svg_writer.h"

#include <algorithm>
#include <cmath>

#include "poet/util/quoting.h"

namespace poet::report {

std::string escape_xml(std::string_view text) {
  std::string out;
  // XML takes no control character, even as a reference, and only well-formed UTF-8: a
  // parser refuses the whole file.
  for (char c : one_line(valid_utf8(text))) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

Svg::Svg(double width, double height) {
  out_ = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\" "
      "font-family=\"Helvetica, Arial, sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      width, height);
}

void Svg::rect(double x, double y, double w, double h, std::string_view fill, std::string_view css_class,
               std::string_view tooltip, std::string_view extra) {
  out_ += fmt::format("<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"{}\"", x, y, w, h, fill);
  if (!css_class.empty()) out_ += fmt::format(" class=\"{}\"", css_class);
  if (!extra.empty()) out_ += fmt::format(" {}", extra);
  if (tooltip.empty()) {
    out_ += "/>\n";
  } else {
    out_ += fmt::format("><title>{}</title></rect>\n", escape_xml(tooltip));
  }
}

void Svg::line(double x1, double y1, double x2, double y2, std::string_view stroke, double width,
               std::string_view dash) {
  out_ += fmt::format("<line x1=\"{:.2f}\" y1=\"{:.2f}\" x2=\"{:.2f}\" y2=\"{:.2f}\" stroke=\"{}\" stroke-width=\"{}\"",
                      x1, y1, x2, y2, stroke, width);
  if (!dash.empty()) out_ += fmt::format(" stroke-dasharray=\"{}\"", dash);
  out_ += "/>\n";
}

void Svg::text(double x, double y, std::string_view content, double size, std::string_view anchor,
               std::string_view extra) {
  out_ += fmt::format("<text x=\"{:.2f}\" y=\"{:.2f}\" font-size=\"{}\" text-anchor=\"{}\" {}>{}</text>\n", x, y, size,
                      anchor, extra, escape_xml(content));
}

void Svg::path(std::string_view d, std::string_view stroke, double width, std::string_view fill,
               std::string_view extra) {
  out_ += fmt::format("<path d=\"{}\" stroke=\"{}\" stroke-width=\"{}\" fill=\"{}\" {}/>\n", d, stroke, width, fill,
                      extra);
}

void Svg::circle(double cx, double cy, double r, std::string_view fill) {
  out_ += fmt::format("<circle cx=\"{:.2f}\" cy=\"{:.2f}\" r=\"{:.2f}\" fill=\"{}\"/>\n", cx, cy, r, fill);
}

void Svg::clip_rect(std::string_view id, double x, double y, double w, double h) {
  out_ += fmt::format(
      "<clipPath id=\"{}\"><rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\"/></clipPath>\n", id, x,
      y, std::max(w, 0.0), std::max(h, 0.0));
}

void Svg::begin_group(std::string_view attributes) { out_ += fmt::format("<g {}>\n", attributes); }

void Svg::end_group() { out_ += "</g>\n"; }

std::string Svg::finish() { return out_ + "</svg>\n"; }

double nice_step(double span, int count) {
  if (span <= 0) return 1;
  const double raw = span / count;
  const double magnitude = std::pow(10, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0, 10.0})
    if (m * magnitude >= raw) return m * magnitude;
  return 10 * magnitude;
}

}  // namespace poet::report
