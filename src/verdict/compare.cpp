#include "verdict/compare.h"

#include <fmt/format.h>

#include <cmath>

namespace kbx::verdict {
namespace {

enum class Cls { Finite, NaN, PosInf, NegInf };

Cls classify(double v) {
  if (std::isnan(v)) return Cls::NaN;
  if (std::isinf(v)) return v > 0 ? Cls::PosInf : Cls::NegInf;
  return Cls::Finite;
}

LeafVerdict fail(Status s, std::string detail) {
  LeafVerdict v;
  v.status = s;
  v.ratio = std::numeric_limits<double>::infinity();
  v.detail = std::move(detail);
  return v;
}

LeafVerdict compare_exact(const Tensor& cand, const Tensor& ref) {
  if (cand.bytes == ref.bytes) return {};
  auto c = cand.to_doubles();
  auto r = ref.to_doubles();
  size_t differ = 0, first = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    bool same = c[i] == r[i] || (std::isnan(c[i]) && std::isnan(r[i]));
    if (!same && differ++ == 0) first = i;
  }
  if (differ == 0) return {};  // only -0/+0 or NaN payloads differ
  return fail(Status::NumericalMismatch,
              fmt::format("{} of {} elements differ from the exact result (first at flat index {}: "
                          "got {}, expected {})",
                          differ, c.size(), first, c[first], r[first]));
}

LeafVerdict compare_allclose(const std::vector<double>& c, const std::vector<double>& r,
                             const suite::Contract& k) {
  LeafVerdict v;
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    Cls cc = classify(c[i]), rc = classify(r[i]);
    if (cc != Cls::Finite || rc != Cls::Finite) {
      if (cc != rc)
        return fail(Status::NonfiniteMismatch,
                    fmt::format("flat index {}: got {}, expected {}", i, c[i], r[i]));
      continue;
    }
    double err = std::fabs(c[i] - r[i]);
    double allowed = k.atol + k.rtol * std::fabs(r[i]);
    v.max_abs_err = std::max(v.max_abs_err, err);
    v.ratio = std::max(v.ratio, allowed > 0 ? err / allowed : (err > 0 ? INFINITY : 0.0));
    if (err > allowed && bad++ == 0) first = i;
  }
  if (bad) {
    v.status = Status::NumericalMismatch;
    v.detail = fmt::format(
        "{} elements outside atol={} rtol={} (first at flat index {}: got {}, "
        "expected {})",
        bad, k.atol, k.rtol, first, c[first], r[first]);
  }
  return v;
}

LeafVerdict compare_shadow(const std::vector<double>& c, const std::vector<double>& r,
                           const std::vector<double>& s, double eps, const suite::Contract& k) {
  double scale = 0, err_c_inf = 0, err_r_inf = 0;
  double sq_c = 0, sq_r = 0, norm_c = 0, norm_r = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    Cls cc = classify(c[i]), rc = classify(r[i]), sc = classify(s[i]);
    if (cc != Cls::Finite && cc != rc && cc != sc) {
      return fail(Status::NonfiniteMismatch,
                  fmt::format("flat index {}: got {} where PyTorch gives {} (float64: {})", i, c[i],
                              r[i], s[i]));
    }
    if (cc == Cls::Finite && rc != Cls::Finite && sc != Cls::Finite) {
      return fail(
          Status::NonfiniteMismatch,
          fmt::format("flat index {}: got finite {} where PyTorch gives {}", i, c[i], r[i]));
    }
    if (sc != Cls::Finite) continue;
    scale = std::max(scale, std::fabs(s[i]));
    if (cc == Cls::Finite) {
      double e = std::fabs(c[i] - s[i]);
      err_c_inf = std::max(err_c_inf, e);
      sq_c += e * e;
      norm_c += s[i] * s[i];
    }
    if (rc == Cls::Finite) {
      double e = std::fabs(r[i] - s[i]);
      err_r_inf = std::max(err_r_inf, e);
      sq_r += e * e;
      norm_r += s[i] * s[i];
    }
  }
  if (scale == 0) scale = 1;
  const double l2_c = std::sqrt(sq_c) / (norm_c > 0 ? std::sqrt(norm_c) : 1.0);
  const double l2_r = std::sqrt(sq_r) / (norm_r > 0 ? std::sqrt(norm_r) : 1.0);
  const double ratio_inf = err_c_inf / std::max(err_r_inf, k.ulp_floor * eps * scale);
  const double ratio_l2 = l2_c / std::max(l2_r, k.ulp_floor * eps);
  LeafVerdict v;
  v.ratio = std::max(ratio_inf, ratio_l2);
  v.max_abs_err = err_c_inf;
  if (!(v.ratio <= k.ratio)) {
    v.status = Status::NumericalMismatch;
    v.detail = fmt::format(
        "error ratio {:.3g} > {:.3g} (max |err| {:.3g} vs PyTorch's {:.3g}; "
        "rel L2 {:.3g} vs PyTorch's {:.3g})",
        v.ratio, k.ratio, err_c_inf, err_r_inf, l2_c, l2_r);
  }
  return v;
}

}  // namespace

LeafVerdict compare_leaf(const Tensor& cand, const Tensor& ref, const Tensor* shadow,
                         const suite::Contract& contract) {
  if (cand.shape != ref.shape) {
    return fail(Status::ShapeMismatch,
                fmt::format("shape {} expected {}", cand.shape_string(), ref.shape_string()));
  }
  if (cand.dtype != ref.dtype) {
    return fail(Status::DtypeMismatch,
                fmt::format("dtype {} expected {}", dtype_name(cand.dtype), dtype_name(ref.dtype)));
  }
  if (!is_floating(ref.dtype) || contract.tolerance == suite::Tolerance::Exact) {
    return compare_exact(cand, ref);
  }
  const auto c = cand.to_doubles();
  const auto r = ref.to_doubles();
  const bool use_shadow =
      contract.tolerance == suite::Tolerance::Shadow && shadow && shadow->shape == ref.shape;
  if (!use_shadow) return compare_allclose(c, r, contract);
  return compare_shadow(c, r, shadow->to_doubles(), dtype_eps(ref.dtype), contract);
}

}  // namespace kbx::verdict
