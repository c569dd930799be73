#include "report/svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace kbx::report::svg {
namespace {

/// Okabe and Ito's palette, without its yellow (too light on white), then three more.
constexpr std::array<const char*, 10> kPalette = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                                  "#56B4E9", "#E69F00", "#000000", "#882255",
                                                  "#44AA99", "#999933"};

constexpr double kFontSize = 12;

/// Round linear steps: 1, 2 or 5 times a power of ten, giving about `count` steps over span.
double nice_step(double span, int count) {
  const double raw = span / count;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * mag >= raw) return m * mag;
  }
  return 10 * mag;
}

}  // namespace

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string px(double v) {
  const double r = std::round(v * 10) / 10;
  return fmt::format("{:.1f}", r == 0 ? 0.0 : r);  // never "-0.0"
}

double Scale::operator()(double v) const {
  double t = 0;
  if (log) {
    const double l = std::log10(std::max(v, lo));
    t = (l - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
  } else {
    t = hi > lo ? (v - lo) / (hi - lo) : 0.5;
  }
  t = std::clamp(t, 0.0, 1.0);
  return px_lo + t * (px_hi - px_lo);
}

std::vector<double> ticks(const Scale& s) {
  std::vector<double> out;
  const double eps = 1e-9;
  if (s.log) {
    const int first = static_cast<int>(std::floor(std::log10(s.lo) + eps));
    const int last = static_cast<int>(std::ceil(std::log10(s.hi) - eps));
    const bool decades_only = last - first > 3;
    for (int k = first; k <= last; ++k) {
      for (double m : {1.0, 2.0, 5.0}) {
        if (decades_only && m != 1.0) continue;
        const double v = m * std::pow(10, k);
        if (v >= s.lo * (1 - eps) && v <= s.hi * (1 + eps)) out.push_back(v);
      }
    }
    return out;
  }
  if (!(s.hi > s.lo)) return {s.lo};
  const double step = std::max(nice_step(s.hi - s.lo, 5), s.min_step);
  for (double v = std::ceil(s.lo / step - eps) * step; v <= s.hi + step * eps; v += step) {
    out.push_back(std::abs(v) < step * eps ? 0.0 : v);
  }
  return out;
}

std::pair<double, double> log_range(double lo, double hi) {
  auto down = [](double v) {
    const double mag = std::pow(10, std::floor(std::log10(v)));
    for (double m : {5.0, 2.0, 1.0}) {
      if (m * mag <= v * (1 + 1e-9)) return m * mag;
    }
    return mag;
  };
  auto up = [](double v) {
    const double mag = std::pow(10, std::floor(std::log10(v)));
    for (double m : {1.0, 2.0, 5.0, 10.0}) {
      if (m * mag >= v * (1 - 1e-9)) return m * mag;
    }
    return 10 * mag;
  };
  return {down(lo), up(std::max(hi, lo))};
}

std::string number(double v) {
  if (v != 0 && (std::abs(v) >= 1e4 || std::abs(v) < 1e-3)) return fmt::format("{:.0e}", v);
  return fmt::format("{:g}", v);
}

std::string axes(const Scale& x, const Scale& y, const std::string& x_title,
                 const std::string& y_title, const Label& x_label, const Label& y_label,
                 std::optional<double> frame_left) {
  const double left = frame_left.value_or(x.px_lo), right = x.px_hi;
  const double bottom = y.px_lo, top = y.px_hi;
  std::string out = "<g class=\"axes\" font-size=\"" + px(kFontSize) + "\">\n";
  for (double v : x_label ? ticks(x) : std::vector<double>{}) {
    const std::string at = px(x(v));
    out += fmt::format(
        "<line class=\"grid\" x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\"/>"
        "<text x=\"{0}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        at, px(top), px(bottom), px(bottom + 16), escape(x_label(v)));
  }
  for (double v : ticks(y)) {
    const std::string at = px(y(v));
    out += fmt::format(
        "<line class=\"grid\" x1=\"{1}\" x2=\"{2}\" y1=\"{0}\" y2=\"{0}\"/>"
        "<text x=\"{3}\" y=\"{0}\" dy=\"4\" text-anchor=\"end\">{4}</text>\n",
        at, px(left), px(right), px(left - 6), escape(y_label(v)));
  }
  out += fmt::format(
      "<path class=\"frame\" d=\"M{0} {1} V{2} H{3}\"/>\n"
      "<text x=\"{4}\" y=\"{5}\" text-anchor=\"middle\" class=\"axis-title\">{6}</text>\n"
      "<text transform=\"translate({7} {8}) rotate(-90)\" text-anchor=\"middle\" "
      "class=\"axis-title\">{9}</text>\n</g>\n",
      px(left), px(top), px(bottom), px(right), px((left + right) / 2), px(bottom + 40),
      escape(x_title), px(left - 48), px((top + bottom) / 2), escape(y_title));
  return out;
}

std::string open(const std::string& id, const std::string& title, const std::string& desc,
                 int width, int height) {
  return fmt::format(
      "<svg id=\"{0}\" class=\"chart\" role=\"img\" viewBox=\"0 0 {1} {2}\" width=\"{1}\" "
      "height=\"{2}\" aria-labelledby=\"{0}-title\" aria-describedby=\"{0}-desc\">\n"
      "<title id=\"{0}-title\">{3}</title>\n<desc id=\"{0}-desc\">{4}</desc>\n"
      "<rect class=\"bg\" width=\"{1}\" height=\"{2}\"/>\n",
      escape(id), width, height, escape(title), escape(desc));
}

std::string close() {
  return "</svg>\n";
}

std::string placeholder(const std::string& id, const std::string& title,
                        const std::string& message) {
  constexpr int kWidth = 760, kHeight = 120;
  return open(id, title, message, kWidth, kHeight) +
         fmt::format(
             "<g class=\"placeholder\" data-empty=\"true\">"
             "<rect x=\"10\" y=\"10\" width=\"{}\" height=\"{}\" rx=\"6\"/>"
             "<text x=\"{}\" y=\"54\" text-anchor=\"middle\" class=\"placeholder-title\">{}</text>"
             "<text x=\"{}\" y=\"78\" text-anchor=\"middle\">{}</text></g>\n",
             kWidth - 20, kHeight - 20, kWidth / 2, escape(title), kWidth / 2, escape(message)) +
         close();
}

MethodColors::MethodColors(std::vector<std::string> methods) : methods_(std::move(methods)) {}

std::string MethodColors::of(const std::string& method) const {
  auto it = std::find(methods_.begin(), methods_.end(), method);
  if (it == methods_.end()) return "#808080";
  return kPalette[static_cast<size_t>(it - methods_.begin()) % kPalette.size()];
}

std::string legend(const std::vector<LegendEntry>& entries, const MethodColors& colors, double x,
                   double y) {
  std::string out = "<g class=\"legend\" font-size=\"" + px(kFontSize) + "\">\n";
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    const double top = y + static_cast<double>(i) * 34;
    out += fmt::format(
        "<g class=\"legend-entry\" data-method=\"{0}\" tabindex=\"0\" role=\"button\" "
        "aria-pressed=\"true\"><title>{0}: click to hide or show</title>"
        "<rect x=\"{1}\" y=\"{2}\" width=\"12\" height=\"12\" fill=\"{3}\"/>"
        "<text x=\"{4}\" y=\"{5}\">{0}</text><text x=\"{4}\" y=\"{6}\" class=\"muted\">{7}</text>"
        "</g>\n",
        escape(e.method), px(x), px(top), colors.of(e.method), px(x + 18), px(top + 10),
        px(top + 24), escape(e.text));
  }
  return out + "</g>\n";
}

}  // namespace kbx::report::svg
