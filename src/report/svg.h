#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kbx::report::svg {

/// Building blocks of the SVG charts of `kbx report`: text escaping, scales and their ticks,
/// axes, the chart's frame with its accessible title, and the placeholder of a chart without
/// data. Every number is written with a fixed precision, so the same data gives the same bytes.

/// Text made safe for XML content and attribute values (&, <, >, ", ').
std::string escape(std::string_view text);

/// A coordinate or length in pixels, with one decimal ("12.5").
std::string px(double v);

/// Maps values in [lo, hi] to pixels in [px_lo, px_hi], linearly or on a base-10 log scale
/// (lo > 0 there); values outside are clamped to the ends.
struct Scale {
  double lo = 0, hi = 1;
  double px_lo = 0, px_hi = 1;
  bool log = false;
  double min_step = 0;  ///< linear ticks are at least this far apart (1: whole numbers only)
  double operator()(double v) const;
};

/// Tick values inside a scale's range: 1, 2, 5 per decade on a log scale (decades only when it
/// spans more than three), about five round steps on a linear one.
std::vector<double> ticks(const Scale& s);

/// The smallest range of 1-2-5 steps (0.1, 0.2, 0.5, 1, ...) that holds [lo, hi]; lo > 0.
std::pair<double, double> log_range(double lo, double hi);

/// A compact number: "0.01", "0.5", "2", "1e+03".
std::string number(double v);

/// How a tick's value is written.
using Label = std::function<std::string(double)>;

/// Grid lines, tick labels and axis titles of a plot area spanned by the two scales (x's pixels
/// left to right, y's bottom to top). Without an x_label, no x ticks (a categorical axis the
/// chart labels itself); the frame starts at frame_left when given, else at x's first pixel.
std::string axes(const Scale& x, const Scale& y, const std::string& x_title,
                 const std::string& y_title, const Label& x_label, const Label& y_label,
                 std::optional<double> frame_left = std::nullopt);

/// The opening of a chart: `<svg id=...>` with role img, its title and description (referenced
/// by aria-labelledby and aria-describedby), and a background.
std::string open(const std::string& id, const std::string& title, const std::string& desc,
                 int width, int height);

/// The end of a chart.
std::string close();

/// A chart without data: the same id and title, and a message saying why it is empty.
std::string placeholder(const std::string& id, const std::string& title,
                        const std::string& message);

/// Each method's color, the same in every chart (a color-blind-safe palette, by method order).
class MethodColors {
 public:
  explicit MethodColors(std::vector<std::string> methods);
  /// The method's color; a method not given at construction gets grey.
  std::string of(const std::string& method) const;

 private:
  std::vector<std::string> methods_;
};

/// A legend: one swatch and text per entry, from (x, y) downwards; each entry carries
/// data-method so the page's toggle can hide and show a method's marks.
struct LegendEntry {
  std::string method;
  std::string text;  ///< shown after the method's name
};
std::string legend(const std::vector<LegendEntry>& entries, const MethodColors& colors, double x,
                   double y);

}  // namespace kbx::report::svg
