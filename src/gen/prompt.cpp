#include "gen/prompt.h"

#include <fmt/format.h>

#include <regex>
#include <vector>

#include "common/error.h"
#include "common/util.h"

namespace kbx::gen {

namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

std::string contract_text(const suite::Task& t) {
  const auto& c = t.contract;
  std::string out = fmt::format("tolerance model: {}", suite::tolerance_name(c.tolerance));
  switch (c.tolerance) {
    case suite::Tolerance::Shadow:
      out += fmt::format(
          " (your error against a float64 computation must be at most {} times the error "
          "PyTorch itself makes at the task's dtype, with a floor of {} ulps; NaN and Inf "
          "positions, shapes and dtypes must match)",
          c.ratio, c.ulp_floor);
      break;
    case suite::Tolerance::Allclose:
      out += fmt::format(" (rtol {}, atol {})", c.rtol, c.atol);
      break;
    case suite::Tolerance::Exact: out += " (outputs must match bit for bit)"; break;
    case suite::Tolerance::Statistical:
      out += " (random op: judged statistically, not bit for bit against PyTorch's generator)";
      break;
  }
  out += c.tf32 ? "; float32 matrix products may use TF32" : "; no TF32 for float32";
  if (!c.note.empty()) out += ". " + c.note;
  return out;
}

/// Each case's name and tier, from the Case("name", "tier", ...) calls of reference.py.
std::string cases_text(const std::string& reference) {
  static const std::regex call(R"re(Case\(\s*"([^"]+)"\s*,\s*"([^"]+)")re");
  std::vector<std::string> lines;
  for (auto it = std::sregex_iterator(reference.begin(), reference.end(), call);
       it != std::sregex_iterator(); ++it) {
    lines.push_back(fmt::format("- {} ({})", (*it)[1].str(), (*it)[2].str()));
  }
  return lines.empty() ? "(see the reference code)" : join(lines, "\n");
}

std::string track_rules(const std::string& track) {
  if (track == "any") return "Any implementation is accepted, as long as it is correct.";
  return "The work must be done by your own @triton.jit kernels, launched from the entry "
         "function. Calling PyTorch, cuBLAS or cuDNN operations for the computation itself is "
         "rejected (status fallback); allocating outputs with torch.empty and the like is fine. "
         "Do not cache results between calls: inputs change between timed calls.";
}

std::string peaks_text(const std::optional<store::Calibration>& cal) {
  if (!cal || cal->peaks.empty()) return "not measured";
  std::vector<std::string> parts;
  for (const auto& [name, value] : cal->peaks) {
    if (name == "copy_bw") {
      parts.push_back(fmt::format("memory bandwidth {:.0f} GB/s", value / 1e9));
    } else {
      parts.push_back(fmt::format("{} {:.1f} TFLOP/s", name, value / 1e12));
    }
  }
  return join(parts, ", ");
}

}  // namespace

std::string render(const std::string& text, const std::string& file, const Values& values) {
  std::string out;
  std::size_t at = 0;
  while (true) {
    const std::size_t open = text.find("{{", at);
    if (open == std::string::npos) break;
    const std::size_t close = text.find("}}", open + 2);
    if (close == std::string::npos) {
      throw Error(file + ": a '{{' with no '}}' after it (at byte " + std::to_string(open) + ")");
    }
    const std::string name = trim(text.substr(open + 2, close - open - 2));
    auto it = values.find(name);
    if (it == values.end()) {
      std::vector<std::string> known;
      for (const auto& [k, _] : values) known.push_back(k);
      throw Error(file + ": unknown placeholder {{" + name + "}} (known: " + join(known, ", ") +
                  ")");
    }
    out += text.substr(at, open - at) + it->second;
    at = close + 2;
  }
  return out + text.substr(at);
}

Values task_values(const suite::Task& t, const std::string& track,
                   const std::optional<store::Calibration>& cal) {
  const std::string reference = read_file(t.dir / "reference.py");
  return {{"task", t.id()},
          {"category", t.category},
          {"name", t.name},
          {"entry", t.entry},
          {"signature", t.signature},
          {"summary", t.summary},
          {"reference_code", reference},
          {"dtypes", join(t.contract.dtypes, ", ")},
          {"tolerance", suite::tolerance_name(t.contract.tolerance)},
          {"contract", contract_text(t)},
          {"cases", cases_text(reference)},
          {"track", track},
          {"track_rules", track_rules(track)},
          {"gpu", cal && !cal->gpu.empty() ? cal->gpu : "an NVIDIA GPU"},
          {"peaks", peaks_text(cal)}};
}

namespace {

struct Block {
  std::string lang, code;
  bool closed = false;
};

/// The fenced blocks of a Markdown reply, in order (an unclosed last block included).
std::vector<Block> fenced_blocks(const std::string& reply) {
  std::vector<Block> blocks;
  bool inside = false;
  std::size_t at = 0;
  while (at <= reply.size()) {
    std::size_t end = reply.find('\n', at);
    if (end == std::string::npos) end = reply.size();
    const std::string line = reply.substr(at, end - at);
    const std::string t = trim(line);
    if (!inside && t.rfind("```", 0) == 0) {
      blocks.push_back({trim(t.substr(3)), "", false});
      inside = true;
    } else if (inside && t == "```") {
      blocks.back().closed = true;
      inside = false;
    } else if (inside) {
      blocks.back().code += line + "\n";
    }
    at = end + 1;
  }
  return blocks;
}

}  // namespace

std::optional<std::string> extract_code(const std::string& reply, const std::string& entry,
                                        std::string* why) {
  if (trim(reply).empty()) {
    *why = "empty reply";
    return std::nullopt;
  }
  const std::regex defines("(^|\\n)\\s*def\\s+" + entry + "\\s*\\(");
  const auto blocks = fenced_blocks(reply);
  int python = 0;
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    const std::string lang = it->lang.substr(0, it->lang.find_first_of(" \t{"));
    if (lang != "python" && lang != "py" && lang != "python3" && !lang.empty()) continue;
    ++python;
    if (!std::regex_search(it->code, defines)) continue;
    if (!it->closed) {
      *why = "the code block that defines " + entry + " is not closed with ``` (reply cut off?)";
      return std::nullopt;
    }
    return it->code;
  }
  if (blocks.empty()) {
    *why = "no fenced code block (```python ... ```) in the reply";
  } else if (python == 0) {
    *why = fmt::format("{} fenced block(s), none of them Python", blocks.size());
  } else {
    *why = fmt::format("{} Python block(s), none defines the entry function {}", python, entry);
  }
  return std::nullopt;
}

}  // namespace kbx::gen
