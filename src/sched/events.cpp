#include "sched/events.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace kbx::sched {
using nlohmann::json;

namespace {

/// A protocol violation in one event.
struct Bad : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const json& field(const json& e, const char* name) {
  auto it = e.find(name);
  if (it == e.end()) throw Bad(std::string("field '") + name + "' missing");
  return *it;
}

[[noreturn]] void mistyped(const char* name, const char* want, const json& v) {
  throw Bad(std::string("field '") + name + "' is " + v.type_name() + ", expected " + want);
}

std::string str(const json& e, const char* name) {
  const json& v = field(e, name);
  if (!v.is_string()) mistyped(name, "a string", v);
  return v.get<std::string>();
}

bool boolean(const json& e, const char* name) {
  const json& v = field(e, name);
  if (!v.is_boolean()) mistyped(name, "true or false", v);
  return v.get<bool>();
}

double number_of(const json& v, const char* name) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {  // proto.py writes non-finite floats as their repr
    const auto s = v.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  mistyped(name, "a number", v);
}

double number(const json& e, const char* name) {
  return number_of(field(e, name), name);
}

std::int64_t count(const json& e, const char* name) {
  const json& v = field(e, name);
  if (!v.is_number_integer() || v.get<std::int64_t>() < 0) {
    mistyped(name, "a non-negative integer", v);
  }
  return v.get<std::int64_t>();
}

const json& array(const json& e, const char* name) {
  const json& v = field(e, name);
  if (!v.is_array()) mistyped(name, "an array", v);
  return v;
}

std::vector<double> numbers(const json& e, const char* name) {
  std::vector<double> out;
  for (const auto& v : array(e, name)) out.push_back(number_of(v, name));
  return out;
}

std::vector<std::string> strings(const json& e, const char* name) {
  std::vector<std::string> out;
  for (const auto& v : array(e, name)) {
    if (!v.is_string()) mistyped(name, "an array of strings", v);
    out.push_back(v.get<std::string>());
  }
  return out;
}

std::vector<std::uint64_t> ids(const json& e, const char* name) {
  std::vector<std::uint64_t> out;
  for (const auto& v : array(e, name)) {
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0) {
      mistyped(name, "an array of non-negative integers", v);
    }
    out.push_back(v.get<std::uint64_t>());
  }
  return out;
}

StaticEvent parse_static(const json& e) {
  StaticEvent s;
  s.syntax_ok = boolean(e, "syntax_ok");
  if (!s.syntax_ok) {
    s.message = str(e, "message");
    return s;
  }
  s.entry_found = boolean(e, "entry_found");
  s.triton_kernels = strings(e, "triton_kernels");
  s.suspicious_imports = strings(e, "suspicious_imports");
  return s;
}

CaseEvent parse_case(const json& e) {
  CaseEvent c;
  c.name = str(e, "case");
  c.structure = str(e, "structure");
  c.outputs = array(e, "outputs");
  for (const auto& o : c.outputs) {
    if (!o.is_object()) mistyped("outputs", "an array of objects", o);
    str(o, "name");
    str(o, "kind");
  }
  c.triton_launches = count(e, "triton_launches");
  c.call_s = number(e, "call_s");
  c.save_s = number(e, "save_s");
  c.read_s = number(e, "read_s");
  c.inputs_from = str(e, "inputs_from");
  c.raw = e;
  return c;
}

TimingEvent parse_timing(const json& e) {
  TimingEvent t;
  t.name = str(e, "case");
  t.ms = numbers(e, "ms");
  t.seconds = number(e, "seconds");
  t.probe_ids = ids(e, "probe_ids");
  t.tampered = strings(e, "tampered");
  t.host_ms = numbers(e, "host_ms");
  t.varied = !e.value("variants", json::array()).empty();
  if (e.contains("contended")) t.contended = boolean(e, "contended");
  t.waits_on_host = e.contains("host_loop_ms") && e["host_loop_ms"].is_number();
  if (e.contains("batches")) t.batches = count(e, "batches");
  if (e.contains("short_holds")) t.short_holds = count(e, "short_holds");
  if (e.contains("gpu_ooms")) t.gpu_ooms = count(e, "gpu_ooms");
  return t;
}

ErrorEvent parse_error(const json& e) {
  ErrorEvent r;
  r.phase = str(e, "phase");
  r.kind = str(e, "kind");
  r.type = str(e, "type");
  r.message = str(e, "message");
  r.trace = str(e, "trace");
  const json& c = field(e, "case");
  if (c.is_string()) {
    r.case_name = c.get<std::string>();
  } else if (!c.is_null()) {
    mistyped("case", "a string or null", c);
  }
  return r;
}

}  // namespace

CandidateEvents parse_candidate_events(const std::vector<json>& events) {
  CandidateEvents out;
  for (size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    std::string kind = "?";
    try {
      if (!e.is_object()) throw Bad("not a JSON object");
      kind = str(e, "ev");
      if (kind == "static") {
        auto s = parse_static(e);
        if (!out.static_facts) out.static_facts = std::move(s);
      } else if (kind == "imported") {
        out.imported = ImportedEvent{number(e, "seconds")};
      } else if (kind == "case") {
        out.cases.push_back(parse_case(e));
      } else if (kind == "timing") {
        out.timings.push_back(parse_timing(e));
      } else if (kind == "error") {
        auto r = parse_error(e);
        out.errors.push_back(r);
        if (!out.error) out.error = std::move(r);
      } else if (kind == "done") {
        out.done = true;
      }
    } catch (const Bad& b) {
      out.problem = "event " + std::to_string(i + 1) + " (" + kind + "): " + b.what();
      return out;
    } catch (const json::exception& j) {
      out.problem = "event " + std::to_string(i + 1) + " (" + kind + "): " + j.what();
      return out;
    }
  }
  return out;
}

}  // namespace kbx::sched
