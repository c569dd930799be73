#pragma once
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kbx::report {

/// How a column's numbers read: in the terminal and Markdown as text, in CSV and JSON as numbers
/// (a Rate as a fraction, 0.466, not 46.6).
enum class Kind {
  Text,    ///< a label
  Count,   ///< an integer
  Rate,    ///< a fraction, shown as a percentage
  Ratio,   ///< a speedup or spread, shown as 1.58x
  Number,  ///< any other number (deviances, coefficients)
  PValue,  ///< a probability, shown in scientific notation when small
  Flag,    ///< yes or no
};

/// One column of an analysis table: its key in CSV headers and JSON rows, its heading in the
/// terminal and in Markdown.
struct Column {
  std::string key;
  std::string heading;
  Kind kind = Kind::Text;
};

/// One cell: a text for Text columns; else a value (absent when undefined, e.g. a geometric mean
/// of no kernels) and, with --bootstrap, its percentile interval.
struct Cell {
  std::string text;
  std::optional<double> value;
  std::optional<double> lo, hi;
  Cell() = default;
  Cell(std::string t) : text(std::move(t)) {}  // NOLINT: a label converts implicitly
  Cell(const char* t) : text(t) {}             // NOLINT
  static Cell number(std::optional<double> v) {
    Cell c;
    if (v && !std::isnan(*v)) c.value = v;
    return c;
  }
};

/// One table of an analysis (an analysis may give several: the deviance analysis gives its
/// models, their tests and their coefficients).
struct Table {
  std::string analysis;  ///< the --analysis name it belongs to
  std::string name;      ///< unique among the tables: "methods", "deviance_tests", ...
  std::string title;     ///< a sentence saying what the rows are
  std::vector<Column> columns;
  std::vector<std::vector<Cell>> rows;
  std::vector<std::string> notes;  ///< how to read it, what was left out and why
};

/// Tables as aligned text, each under its title, notes after it.
std::string tables_text(const std::vector<Table>& tables);

/// Tables as CSV: per table a line "# table: NAME", a header row of column keys, its rows, and a
/// blank line; an interval adds KEY_lo and KEY_hi columns after KEY (when any row has one).
std::string tables_csv(const std::vector<Table>& tables);

/// Tables as one JSON document: `header`'s fields (schema_version, inputs, options) and
/// "tables": [{analysis, name, title, columns: [{key, heading, kind}], rows: [{KEY: value,
/// KEY_ci: [lo, hi]}], notes}]; undefined numbers are null.
std::string tables_json(const std::vector<Table>& tables, nlohmann::json header);

/// Tables as Markdown: per table a heading, a pipe table and its notes.
std::string tables_markdown(const std::vector<Table>& tables, const std::string& title);

}  // namespace kbx::report
