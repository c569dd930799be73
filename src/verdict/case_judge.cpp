#include "verdict/case_judge.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>

namespace kbx::verdict {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path with_role(const fs::path& base, const char* role) {
  return fs::path(base.string() + "." + role + ".kbt");
}

TensorFile read_optional(const fs::path& path, bool reference = false) {
  if (!fs::exists(fs::symlink_status(path))) return {};
  return reference ? read_reference_tensor_file(path) : read_tensor_file(path);
}

void worsen(CaseVerdict& v, const LeafVerdict& leaf, const std::string& what) {
  v.ratio = std::max(v.ratio, leaf.ratio);
  if (leaf.status != Status::Passed && v.status == Status::Passed) {
    v.status = leaf.status;
    v.detail = what + ": " + leaf.detail;
  }
}

CaseVerdict violation(Status s, std::string detail) {
  CaseVerdict v;
  v.status = s;
  v.ratio = std::numeric_limits<double>::infinity();
  v.detail = std::move(detail);
  return v;
}

/// Output structure and per-leaf kinds: anything wrong here is decided without reading data.
CaseVerdict check_kinds(const json& ref_ev, const json& cand_ev, const std::string& device) {
  const std::string ref_structure = ref_ev.value("structure", "");
  const std::string cand_structure = cand_ev.value("structure", "");
  if (ref_structure != cand_structure) {
    return violation(
        Status::ShapeMismatch,
        fmt::format("returned {} where the reference returns {}", cand_structure, ref_structure));
  }
  const json& ref_out = ref_ev.at("outputs");
  const json& cand_out = cand_ev.at("outputs");
  if (ref_out.size() != cand_out.size()) {
    return violation(Status::ShapeMismatch,
                     fmt::format("{} outputs, expected {}", cand_out.size(), ref_out.size()));
  }
  for (size_t i = 0; i < ref_out.size(); ++i) {
    const json& r = ref_out[i];
    const json& c = cand_out[i];
    const std::string name = r.value("name", "out");
    const std::string ckind = c.value("kind", "");
    if (ckind == "tensor_subclass") {
      return violation(Status::OutputViolation,
                       fmt::format("{} is a {} (a tensor subclass), not a plain torch.Tensor", name,
                                   c.value("cls", "?")));
    }
    if (ckind == "other") {
      return violation(Status::OutputViolation,
                       fmt::format("{} is a {}, not a tensor", name, c.value("type", "?")));
    }
    if (ckind != r.value("kind", "")) {
      return violation(Status::OutputViolation,
                       fmt::format("{} is a {} where the reference returns a {}", name, ckind,
                                   r.value("kind", "")));
    }
    if (ckind == "tensor" && c.value("device", "") != device) {
      return violation(Status::OutputViolation, fmt::format("{} is on device {}, expected {}", name,
                                                            c.value("device", ""), device));
    }
    const json ralias = r.value("alias", json());
    const json calias = c.value("alias", json());
    if (!calias.is_null() && calias != ralias) {
      return violation(Status::OutputViolation,
                       fmt::format("{} shares memory with input {}; the reference's does not", name,
                                   calias.get<std::string>()));
    }
  }
  return {};
}

/// The output file with the leaves a worker marked `same_as` an updated input filled in: from
/// the inputs-after file, or from the original inputs when that input was left unchanged.
TensorFile with_same_as(TensorFile out, const json& event, const TensorFile& after,
                        const TensorFile* in) {
  for (const json& leaf : event.value("outputs", json::array())) {
    const std::string same_as = leaf.value("same_as", "");
    const std::string name = leaf.value("name", "out");
    if (same_as.empty() || out.find(name)) continue;
    const Tensor* t = after.find(same_as);
    if (!t && in) t = in->find(same_as);
    if (!t) continue;  // reported as missing by the comparison
    Tensor copy = *t;
    copy.name = name;
    out.tensors.push_back(std::move(copy));
  }
  return out;
}

/// Output leaves that both sides return as the same updated input: the input comparison
/// judges their values once.
std::set<std::string> judged_as_inputs(const json& ref_ev, const json& cand_ev) {
  std::map<std::string, std::string> ref_same;
  for (const json& leaf : ref_ev.value("outputs", json::array())) {
    ref_same[leaf.value("name", "out")] = leaf.value("same_as", "");
  }
  std::set<std::string> names;
  for (const json& leaf : cand_ev.value("outputs", json::array())) {
    const std::string name = leaf.value("name", "out");
    const std::string same_as = leaf.value("same_as", "");
    if (!same_as.empty() && ref_same[name] == same_as) names.insert(name);
  }
  return names;
}

/// The names a reference event lists under `key` ("shadow_minus_ref",
/// "shadow_after_minus_ref": shadow tensors stored as their difference from the reference).
std::set<std::string> names_listed(const json& ref_ev, const char* key) {
  std::set<std::string> names;
  const auto it = ref_ev.find(key);
  if (it == ref_ev.end() || !it->is_array()) return names;
  for (const json& name : *it) {
    if (name.is_string()) names.insert(name.get<std::string>());
  }
  return names;
}

/// The reference event's floors under `key` ("sensitivity" for result leaves,
/// "sensitivity_after" for updated inputs): {name: {"inf", "l2", ...}}.
std::map<std::string, Sensitivity> sensitivities(const json& ref_ev, const char* key) {
  std::map<std::string, Sensitivity> floors;
  const auto it = ref_ev.find(key);
  if (it == ref_ev.end() || it->is_null()) return floors;
  if (!it->is_object()) {
    throw std::runtime_error(fmt::format("reference event: {} is not an object", key));
  }
  for (const auto& [name, entry] : it->items()) {
    Sensitivity f;
    bool valid = entry.is_object();
    for (auto [field, value] : {std::pair{"inf", &f.max_abs}, std::pair{"l2", &f.rel_l2}}) {
      const auto v = valid ? entry.find(field) : entry.end();
      valid = valid && v != entry.end() && v->is_number() && v->get<double>() >= 0 &&
              std::isfinite(v->get<double>());
      if (valid) *value = v->get<double>();
    }
    if (!valid) {
      throw std::runtime_error(fmt::format(
          "reference event: {}[{}] must hold inf and l2, each a finite, non-negative number", key,
          name));
    }
    floors[name] = f;
  }
  return floors;
}

Sensitivity floor_of(const std::map<std::string, Sensitivity>& floors, const std::string& name) {
  const auto it = floors.find(name);
  return it == floors.end() ? Sensitivity{} : it->second;
}

ShadowForm form_of(const std::set<std::string>& minus_ref, const std::string& name) {
  return minus_ref.count(name) ? ShadowForm::MinusRef : ShadowForm::Values;
}

// A result this small, each of whose elements is computed from at least this many inputs on
// average, is a long reduction (fused_exp_mean over 128M elements, the losses' means): where
// it fails the shadow rule normwise, its detail says what kbx asks of such a kernel.
constexpr std::uint64_t kLongReductionMaxResult = 4096;
constexpr std::uint64_t kLongReductionMinInputs = 65536;

/// The elements of a case's floating inputs, as its reference event lists them ("inputs":
/// {name: {"dtype", "shape"}}); 0 when it lists none.
std::uint64_t floating_input_elements(const json& ref_event) {
  const json inputs = ref_event.value("inputs", json::object());
  if (!inputs.is_object()) return 0;
  std::uint64_t total = 0;
  for (const auto& [name, meta] : inputs.items()) {
    if (!meta.is_object()) continue;
    DType dtype;
    if (!parse_dtype(meta.value("dtype", ""), &dtype) || !is_floating(dtype) || is_complex(dtype)) {
      continue;
    }
    std::uint64_t n = 1;
    for (const auto& d : meta.value("shape", json::array())) {
      n *= d.is_number_integer() && d.get<std::int64_t>() > 0 ? d.get<std::uint64_t>() : 0;
    }
    total += n;
  }
  return total;
}

/// What a normwise failure of a result with few elements, each computed from many inputs, adds
/// to its detail: kbx's contract for long reductions and how a kernel meets it.
std::string long_reduction_hint(std::uint64_t result_elements, std::uint64_t input_elements) {
  const std::uint64_t per_element = input_elements / std::max<std::uint64_t>(result_elements, 1);
  if (result_elements > kLongReductionMaxResult || per_element < kLongReductionMinInputs) return "";
  return fmt::format(
      "; a long reduction (about {} inputs per result element): kbx asks for about PyTorch's "
      "accuracy there, which short partial sums added up as a tree give, and refuses the error "
      "of one accumulator run long (docs/task-format.md)",
      per_element);
}

void compare_outputs(CaseVerdict& v, const TensorFile& cand, const TensorFile& ref,
                     const TensorFile& shadow, const std::set<std::string>& shadow_minus_ref,
                     const std::map<std::string, Sensitivity>& floors,
                     const suite::Contract& contract, bool shapes_only = false,
                     const std::set<std::string>& skip = {}, bool per_element = false,
                     const Yield& yield = {}, std::uint64_t input_elements = 0) {
  for (const auto& r : ref.tensors) {
    if (skip.count(r.name)) continue;
    const Tensor* c = cand.find(r.name);
    if (!c) {
      worsen(v, {Status::ShapeMismatch, INFINITY, 0, "missing"}, r.name);
      continue;
    }
    if (shapes_only) {
      if (c->shape != r.shape) {
        worsen(v,
               {Status::ShapeMismatch, INFINITY, 0,
                "shape " + c->shape_string() + " expected " + r.shape_string()},
               r.name);
      } else if (c->dtype != r.dtype) {
        worsen(v,
               {Status::DtypeMismatch, INFINITY, 0,
                std::string("dtype ") + dtype_name(c->dtype) + " expected " + dtype_name(r.dtype)},
               r.name);
      }
      continue;
    }
    LeafVerdict leaf = compare_leaf(*c, r, shadow.find(r.name), contract, per_element, yield,
                                    form_of(shadow_minus_ref, r.name), floor_of(floors, r.name));
    if (leaf.status == Status::NumericalMismatch && leaf.detail.rfind("error ratio", 0) == 0) {
      leaf.detail += long_reduction_hint(static_cast<std::uint64_t>(r.numel()), input_elements);
    }
    worsen(v, leaf, r.name);
  }
}

/// The inputs of a case whose reference kept no inputs file (a full-size case it leaves
/// unchanged, whose inputs its generator rebuilds: lean_inputs): the worker sends back only the
/// inputs the call changed, bit for bit, so any of them it names is a mutation.
void compare_unkept_inputs(CaseVerdict& v, const json& ref_event, const TensorFile& cand_after) {
  const json inputs = ref_event.value("inputs", json::object());
  for (const auto& after : cand_after.tensors) {
    if (!inputs.is_object() || !inputs.contains(after.name)) continue;  // not an input: ignored
    worsen(v,
           {Status::InputMutation, INFINITY, 0,
            "changed by the candidate; the reference leaves it unchanged"},
           "input " + after.name);
  }
}

void compare_inputs(CaseVerdict& v, const TensorFile& in, const TensorFile& cand_after,
                    const TensorFile& ref_after, const TensorFile& shadow_after,
                    const std::set<std::string>& shadow_after_minus_ref,
                    const std::map<std::string, Sensitivity>& floors,
                    const suite::Contract& contract, bool shapes_only = false,
                    bool per_element = false, const Yield& yield = {}) {
  for (const auto& original : in.tensors) {
    // The worker sends back only the inputs the call changed: a missing one is unchanged.
    const Tensor* after = cand_after.find(original.name);
    if (!after) after = &original;
    const Tensor* expected = ref_after.find(original.name);
    if (expected && shapes_only) {  // a random case's updated input: its judge decides values
      if (after->shape != expected->shape || after->dtype != expected->dtype) {
        worsen(v, {Status::ShapeMismatch, INFINITY, 0, "shape or dtype changed"},
               "updated input " + original.name);
      }
      continue;
    }
    if (expected) {
      worsen(v,
             compare_leaf(*after, *expected, shadow_after.find(original.name), contract,
                          per_element, yield, form_of(shadow_after_minus_ref, original.name),
                          floor_of(floors, original.name)),
             "updated input " + original.name);
    } else if (after != &original && !after->bitwise_equal(original)) {
      worsen(v,
             {Status::InputMutation, INFINITY, 0,
              "changed by the candidate; the reference leaves it unchanged"},
             "input " + original.name);
    }
  }
}

/// The reference side of a case: inputs, outputs and float64 shadow, with `same_as` leaves
/// filled in, and the inputs after the call.
struct ReferenceSide {
  bool in_kept = true;  ///< false: the reference kept no inputs file (`in` is empty)
  TensorFile in, ref, ref_after, shadow, shadow_after;
  std::set<std::string> shadow_minus_ref, shadow_after_minus_ref;  ///< stored as shadow - ref
  std::map<std::string, Sensitivity> floors, floors_after;         ///< results', updated inputs'
};

ReferenceSide read_reference_side(const CaseFiles& f) {
  ReferenceSide r;
  r.in_kept = f.ref_event.value("in_file", true);
  // kbx's own reference worker wrote these, where no candidate sees them: mapped, not copied.
  if (r.in_kept) {
    r.in = read_reference_tensor_file(with_role(f.in_base.empty() ? f.ref_base : f.in_base, "in"));
  }
  r.ref_after = read_optional(with_role(f.ref_base, "ref_after"), true);
  r.shadow_after = read_optional(with_role(f.ref_base, "shadow_after"), true);
  if (!r.in_kept && !r.ref_after.tensors.empty()) {
    throw std::runtime_error(fmt::format(
        "{}: the reference updates inputs in place but kept no inputs file (in_file false)",
        f.ref_base.string()));
  }
  r.ref = with_same_as(read_reference_tensor_file(with_role(f.ref_base, "ref")), f.ref_event,
                       r.ref_after, r.in_kept ? &r.in : nullptr);
  if (fs::exists(with_role(f.ref_base, "shadow"))) {
    r.shadow = with_same_as(read_reference_tensor_file(with_role(f.ref_base, "shadow")),
                            f.ref_event, r.shadow_after, nullptr);
  }
  r.shadow_minus_ref = names_listed(f.ref_event, "shadow_minus_ref");
  r.shadow_after_minus_ref = names_listed(f.ref_event, "shadow_after_minus_ref");
  r.floors = sensitivities(f.ref_event, "sensitivity");
  r.floors_after = sensitivities(f.ref_event, "sensitivity_after");
  return r;
}

}  // namespace

TensorFile reference_outputs(const CaseFiles& f) {
  return read_reference_side(f).ref;
}

CaseVerdict judge_case(const CaseFiles& f, const suite::Contract& contract,
                       const std::string& device, bool random, const Yield& yield) {
  CaseVerdict v = check_kinds(f.ref_event, f.cand_event, device);
  if (v.status != Status::Passed) return v;
  const ReferenceSide r = read_reference_side(f);
  const TensorFile cand_after = read_optional(with_role(f.cand_base, "cand_after"));
  const TensorFile cand = with_same_as(read_tensor_file(with_role(f.cand_base, "cand")),
                                       f.cand_event, cand_after, r.in_kept ? &r.in : nullptr);
  // Special values (the case's inputs came from ctx.special()) of an elementwise task: every
  // finite element against its own magnitude, since the extremes set the normwise scale.
  const bool per_element = contract.per_element_special && f.ref_event.value("special", false);
  compare_outputs(v, cand, r.ref, r.shadow, r.shadow_minus_ref, r.floors, contract, random,
                  judged_as_inputs(f.ref_event, f.cand_event), per_element, yield,
                  floating_input_elements(f.ref_event));
  if (r.in_kept) {
    compare_inputs(v, r.in, cand_after, r.ref_after, r.shadow_after, r.shadow_after_minus_ref,
                   r.floors_after, contract, random, per_element, yield);
  } else {
    compare_unkept_inputs(v, f.ref_event, cand_after);
  }
  return v;
}

CaseVerdict judge_synthetic(const CaseFiles& f, const TensorFile& outputs,
                            const suite::Contract& contract) {
  CaseVerdict v;
  const ReferenceSide r = read_reference_side(f);
  compare_outputs(v, outputs, r.ref, r.shadow, r.shadow_minus_ref, r.floors, contract);
  // A synthetic candidate leaves inputs unchanged: it fails where the reference updates them.
  compare_inputs(v, r.in, r.in, r.ref_after, r.shadow_after, r.shadow_after_minus_ref,
                 r.floors_after, contract);
  return v;
}

CaseVerdict fresh_twin_verdict(const CaseVerdict& twin, const std::string& base,
                               const CaseFiles& twin_on_base, const suite::Contract& contract,
                               const std::string& device, const Yield& yield) {
  bool base_answer = false;
  try {
    base_answer = judge_case(twin_on_base, contract, device, false, yield).status == Status::Passed;
  } catch (const std::exception&) {
    base_answer = false;  // files that do not fit the base's: not its answer
  }
  CaseVerdict v = twin;
  if (base_answer) {
    v.status = Status::StaleResult;
    v.detail = fmt::format(
        "on fresh values written into the tensors it was timed on, a timed call returned the "
        "answer to {}'s values from before the write (a result cached across calls): {}",
        base, twin.detail);
  } else {
    v.detail = fmt::format(
        "on fresh values of {}'s shapes (written into the tensors it was timed on; not the old "
        "values' answer either): {}",
        base, twin.detail);
  }
  return v;
}

}  // namespace kbx::verdict
