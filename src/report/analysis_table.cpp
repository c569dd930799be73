#include "report/analysis_table.h"

#include <fmt/format.h>

#include <algorithm>

namespace kbx::report {
namespace {

bool has_interval(const Table& t, size_t col) {
  return std::any_of(t.rows.begin(), t.rows.end(),
                     [&](const auto& row) { return col < row.size() && row[col].lo; });
}

/// A value as the terminal and Markdown show it.
std::string shown(Kind kind, double v) {
  switch (kind) {
    case Kind::Count: return fmt::format("{:.0f}", v);
    case Kind::Rate: return fmt::format("{:.1f}%", v * 100);
    case Kind::Ratio: return fmt::format("{:.2f}x", v);
    case Kind::PValue: return fmt::format("{:.3g}", v);
    case Kind::Flag: return v != 0 ? "yes" : "no";
    case Kind::Number:
    case Kind::Text: break;
  }
  return fmt::format("{:.6g}", v);
}

std::string shown(const Column& c, const Cell& cell) {
  if (c.kind == Kind::Text) return cell.text;
  if (!cell.value) return "-";
  std::string s = shown(c.kind, *cell.value);
  if (cell.lo && cell.hi) {
    const double scale = c.kind == Kind::Rate ? 100 : 1;
    s += fmt::format(" [{:.{}f}, {:.{}f}]", *cell.lo * scale, c.kind == Kind::Rate ? 1 : 2,
                     *cell.hi * scale, c.kind == Kind::Rate ? 1 : 2);
  }
  return s;
}

/// A value as CSV holds it: the shortest text that reads back as the same double.
std::string raw(Kind kind, double v) {
  if (kind == Kind::Count || kind == Kind::Flag) return fmt::format("{:.0f}", v);
  return fmt::format("{}", v);
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Text: return "text";
    case Kind::Count: return "count";
    case Kind::Rate: return "rate";
    case Kind::Ratio: return "ratio";
    case Kind::Number: return "number";
    case Kind::PValue: return "p_value";
    case Kind::Flag: return "flag";
  }
  return "text";
}

nlohmann::json json_value(const Column& c, const Cell& cell) {
  if (c.kind == Kind::Text) return cell.text;
  if (!cell.value) return nullptr;
  if (c.kind == Kind::Count) return static_cast<std::int64_t>(*cell.value);
  if (c.kind == Kind::Flag) return *cell.value != 0;
  return *cell.value;
}

bool numeric(Kind k) {
  return k != Kind::Text;
}

}  // namespace

std::string tables_text(const std::vector<Table>& tables) {
  std::string out;
  for (const auto& t : tables) {
    out += fmt::format("== {} ({})\n", t.title, t.name);
    std::vector<std::vector<std::string>> cells;
    std::vector<size_t> width(t.columns.size());
    for (size_t c = 0; c < t.columns.size(); ++c) width[c] = t.columns[c].heading.size();
    for (const auto& row : t.rows) {
      auto& line = cells.emplace_back();
      for (size_t c = 0; c < t.columns.size(); ++c) {
        line.push_back(c < row.size() ? shown(t.columns[c], row[c]) : "");
        width[c] = std::max(width[c], line.back().size());
      }
    }
    auto emit = [&](const std::vector<std::string>& line) {
      std::string text;
      for (size_t c = 0; c < line.size(); ++c) {
        if (c) text += "  ";
        text += numeric(t.columns[c].kind) ? fmt::format("{:>{}}", line[c], width[c])
                                           : fmt::format("{:<{}}", line[c], width[c]);
      }
      while (!text.empty() && text.back() == ' ') text.pop_back();
      out += text + "\n";
    };
    std::vector<std::string> headings;
    for (const auto& c : t.columns) headings.push_back(c.heading);
    emit(headings);
    for (const auto& line : cells) emit(line);
    if (t.rows.empty()) out += "(no rows)\n";
    for (const auto& n : t.notes) out += "note: " + n + "\n";
    out += "\n";
  }
  return out;
}

std::string tables_csv(const std::vector<Table>& tables) {
  std::string out;
  for (const auto& t : tables) {
    out += "# table: " + t.name + "\n";
    std::vector<bool> ci(t.columns.size());
    std::vector<std::string> header;
    for (size_t c = 0; c < t.columns.size(); ++c) {
      header.push_back(t.columns[c].key);
      ci[c] = has_interval(t, c);
      if (ci[c])
        header.push_back(t.columns[c].key + "_lo"), header.push_back(t.columns[c].key + "_hi");
    }
    out += fmt::format("{}\n", fmt::join(header, ","));
    for (const auto& row : t.rows) {
      std::vector<std::string> fields;
      for (size_t c = 0; c < t.columns.size(); ++c) {
        const Cell& cell = c < row.size() ? row[c] : Cell();
        const Kind k = t.columns[c].kind;
        fields.push_back(k == Kind::Text ? csv_field(cell.text)
                         : cell.value    ? raw(k, *cell.value)
                                         : "");
        if (ci[c]) {
          fields.push_back(cell.lo ? raw(k, *cell.lo) : "");
          fields.push_back(cell.hi ? raw(k, *cell.hi) : "");
        }
      }
      out += fmt::format("{}\n", fmt::join(fields, ","));
    }
    out += "\n";
  }
  return out;
}

std::string tables_json(const std::vector<Table>& tables, nlohmann::json header) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& t : tables) {
    nlohmann::json columns = nlohmann::json::array();
    for (const auto& c : t.columns) {
      columns.push_back({{"key", c.key}, {"heading", c.heading}, {"kind", kind_name(c.kind)}});
    }
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : t.rows) {
      nlohmann::json r = nlohmann::json::object();
      for (size_t c = 0; c < t.columns.size() && c < row.size(); ++c) {
        r[t.columns[c].key] = json_value(t.columns[c], row[c]);
        if (row[c].lo && row[c].hi) r[t.columns[c].key + "_ci"] = {*row[c].lo, *row[c].hi};
      }
      rows.push_back(std::move(r));
    }
    list.push_back({{"analysis", t.analysis},
                    {"name", t.name},
                    {"title", t.title},
                    {"columns", columns},
                    {"rows", rows},
                    {"notes", t.notes}});
  }
  header["tables"] = std::move(list);
  return header.dump(2) + "\n";
}

std::string tables_markdown(const std::vector<Table>& tables, const std::string& title) {
  std::string out = "# " + title + "\n";
  for (const auto& t : tables) {
    out += fmt::format("\n## {}\n\n", t.title);
    std::vector<std::string> headings, rule;
    for (const auto& c : t.columns) {
      headings.push_back(c.heading);
      rule.push_back(numeric(c.kind) ? "---:" : "---");
    }
    out += fmt::format("| {} |\n|{}|\n", fmt::join(headings, " | "), fmt::join(rule, "|"));
    for (const auto& row : t.rows) {
      std::vector<std::string> fields;
      for (size_t c = 0; c < t.columns.size(); ++c) {
        std::string s = c < row.size() ? shown(t.columns[c], row[c]) : "";
        std::replace(s.begin(), s.end(), '|', '/');
        fields.push_back(s);
      }
      out += fmt::format("| {} |\n", fmt::join(fields, " | "));
    }
    if (!t.notes.empty()) out += "\n";
    for (const auto& n : t.notes) out += n + "  \n";
  }
  return out;
}

}  // namespace kbx::report
