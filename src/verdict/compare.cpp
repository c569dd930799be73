#include "verdict/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/util.h"

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

/// Runs body(first, count, c, r, s) over blocks of converted values, in order, on several
/// threads for large tensors; each thread gets its own State, merged by the caller. Tensors are
/// mapped files of up to gigabytes, so nothing is converted whole. A shadow of form MinusRef gets
/// the reference added back (s = r + (shadow - r)). yield is called before each chunk of kChunk
/// values; the blocks within a chunk are small enough (48 KiB of doubles for three) for their
/// converted values to stay in the core's nearest cache until body reads them, which is faster
/// than converting a whole chunk first.
template <typename State, typename Body>
std::vector<State> for_chunks(const Tensor& cand, const Tensor& ref, const Tensor* shadow,
                              const Yield& yield, Body body, ShadowForm form = ShadowForm::Values) {
  constexpr size_t kChunk = 1 << 15;
  constexpr size_t kBlock = 1 << 11;
  const size_t n = ref.value_count();
  const size_t threads = part_count(n, 1 << 20, 16);
  std::vector<State> states(threads);
  auto work = [&](size_t t) {
    std::vector<double> c(kBlock), r(kBlock), s(shadow ? kBlock : 0);
    const size_t lo = n * t / threads, hi = n * (t + 1) / threads;
    for (size_t chunk = lo; chunk < hi; chunk += kChunk) {
      if (yield) yield();
      const size_t chunk_end = std::min(chunk + kChunk, hi);
      for (size_t first = chunk; first < chunk_end; first += kBlock) {
        const size_t count = std::min(kBlock, chunk_end - first);
        cand.to_doubles(first, count, c.data());
        ref.to_doubles(first, count, r.data());
        if (shadow) shadow->to_doubles(first, count, s.data());
        if (shadow && form == ShadowForm::MinusRef) {
          for (size_t i = 0; i < count; ++i) s[i] += r[i];
        }
        body(states[t], first, count, c.data(), r.data(), shadow ? s.data() : nullptr);
      }
    }
  };
  run_in_parts(threads, work);
  return states;
}

/// The first offending element found by any thread (lowest flat index), if any.
struct FirstBad {
  size_t index = SIZE_MAX;
  double got = 0, expected = 0, float64 = 0;
  void offer(size_t i, double g, double e, double f) {
    if (i < index) index = i, got = g, expected = e, float64 = f;
  }
  void merge(const FirstBad& o) {
    if (o.index < index) *this = o;
  }
};

LeafVerdict compare_exact(const Tensor& cand, const Tensor& ref, const Yield& yield) {
  if (cand.bitwise_equal(ref)) return {};
  struct State {
    size_t differ = 0;
    FirstBad first;
  };
  auto states = for_chunks<State>(
      cand, ref, nullptr, yield,
      [](State& st, size_t first, size_t count, const double* c, const double* r, const double*) {
        for (size_t i = 0; i < count; ++i) {
          bool same = c[i] == r[i] || (std::isnan(c[i]) && std::isnan(r[i]));
          if (!same) {
            ++st.differ;
            st.first.offer(first + i, c[i], r[i], 0);
          }
        }
      });
  State all;
  for (const auto& st : states) all.differ += st.differ, all.first.merge(st.first);
  if (all.differ == 0) return {};  // only -0/+0 or NaN payloads differ
  return fail(Status::NumericalMismatch,
              fmt::format("{} of {} elements differ from the exact result (first at flat index {}: "
                          "got {}, expected {})",
                          all.differ, ref.value_count(), all.first.index, all.first.got,
                          all.first.expected));
}

LeafVerdict compare_allclose(const Tensor& cand, const Tensor& ref, const suite::Contract& k,
                             const Yield& yield) {
  struct State {
    size_t bad = 0;
    double max_err = 0, ratio = 0;
    FirstBad first, nonfinite;
  };
  auto states = for_chunks<State>(
      cand, ref, nullptr, yield,
      [&k](State& st, size_t first, size_t count, const double* c, const double* r, const double*) {
        for (size_t i = 0; i < count; ++i) {
          Cls cc = classify(c[i]), rc = classify(r[i]);
          if (cc != Cls::Finite || rc != Cls::Finite) {
            if (cc != rc) st.nonfinite.offer(first + i, c[i], r[i], 0);
            continue;
          }
          double err = std::fabs(c[i] - r[i]);
          double allowed = k.atol + k.rtol * std::fabs(r[i]);
          st.max_err = std::max(st.max_err, err);
          st.ratio = std::max(st.ratio, allowed > 0 ? err / allowed : (err > 0 ? INFINITY : 0.0));
          if (err > allowed) ++st.bad, st.first.offer(first + i, c[i], r[i], 0);
        }
      });
  State all;
  for (const auto& st : states) {
    all.bad += st.bad;
    all.max_err = std::max(all.max_err, st.max_err);
    all.ratio = std::max(all.ratio, st.ratio);
    all.first.merge(st.first);
    all.nonfinite.merge(st.nonfinite);
  }
  if (all.nonfinite.index != SIZE_MAX) {
    return fail(Status::NonfiniteMismatch,
                fmt::format("flat index {}: got {}, expected {}", all.nonfinite.index,
                            all.nonfinite.got, all.nonfinite.expected));
  }
  LeafVerdict v;
  v.max_abs_err = all.max_err;
  v.ratio = all.ratio;
  if (all.bad) {
    v.status = Status::NumericalMismatch;
    v.detail = fmt::format(
        "{} elements outside atol={} rtol={} (first at flat index {}: got {}, "
        "expected {})",
        all.bad, k.atol, k.rtol, all.first.index, all.first.got, all.first.expected);
  }
  return v;
}

/// What the shadow rule accumulates over one thread's range of elements.
struct ShadowState {
  double scale = 0, err_c_inf = 0, err_r_inf = 0, sq_c = 0, sq_r = 0, norm_c = 0, norm_r = 0;
  double elem_ratio = 0;          // per-element rule: worst error over the element's allowance
  size_t elem_bad = 0;            // elements beyond their allowance
  FirstBad invented, mismatched;  // finite where both are not; non-finite of the wrong class
  FirstBad elem_first;            // the first element beyond its allowance
};

/// The per-element rule's parameters (used when per_element).
struct ElementRule {
  bool per_element = false;
  double floor = 0;  // ulp_floor * eps: the allowance's floor, relative to max(|s|, 1)
  double ratio = 0;  // the contract's ratio
};

/// Adds a block of candidate, reference and shadow values to st, element by element in order:
/// any values, special ones classified.
void shadow_block(ShadowState& st, const ElementRule& rule, size_t first, size_t count,
                  const double* c, const double* r, const double* s) {
  for (size_t i = 0; i < count; ++i) {
    Cls cc = classify(c[i]), rc = classify(r[i]), sc = classify(s[i]);
    if (cc != Cls::Finite && cc != rc && cc != sc) {
      st.mismatched.offer(first + i, c[i], r[i], s[i]);
    }
    if (cc == Cls::Finite && rc != Cls::Finite && sc != Cls::Finite) {
      st.invented.offer(first + i, c[i], r[i], s[i]);
    }
    if (sc != Cls::Finite) continue;
    st.scale = std::max(st.scale, std::fabs(s[i]));
    if (cc == Cls::Finite) {
      double e = std::fabs(c[i] - s[i]);
      st.err_c_inf = std::max(st.err_c_inf, e);
      st.sq_c += e * e;
      st.norm_c += s[i] * s[i];
    }
    if (rc == Cls::Finite) {
      double e = std::fabs(r[i] - s[i]);
      st.err_r_inf = std::max(st.err_r_inf, e);
      st.sq_r += e * e;
      st.norm_r += s[i] * s[i];
    }
    if (rule.per_element && cc == Cls::Finite) {
      const double own = rc == Cls::Finite ? std::fabs(r[i] - s[i]) : 0.0;
      const double base = std::max(own, rule.floor * std::max(std::fabs(s[i]), 1.0));
      const double q = std::fabs(c[i] - s[i]) / base;
      st.elem_ratio = std::max(st.elem_ratio, q);
      if (!(q <= rule.ratio)) ++st.elem_bad, st.elem_first.offer(first + i, c[i], r[i], s[i]);
    }
  }
}

/// shadow_block for a block whose values are all finite (nearly every block), without classifying
/// each: the running sums and maxima are kept in locals (not in st, which the value pointers
/// might alias) and st is updated only when the block proves all finite. Any NaN or infinity
/// among c, r, s makes |c - s| or |r - s|, and so sq_c or sq_r, non-finite (as do errors too
/// large to square, rare enough to go the slow way too); then st is left as it was and false
/// returned, for shadow_block to add the block instead. Otherwise the same operations on each
/// element in the same order as shadow_block, so the same results to the bit. sq_c and sq_r must
/// be finite before the block.
bool shadow_block_finite(ShadowState& st, const ElementRule& rule, size_t first, size_t count,
                         const double* c, const double* r, const double* s) {
  double scale = st.scale, err_c_inf = st.err_c_inf, err_r_inf = st.err_r_inf;
  double sq_c = st.sq_c, sq_r = st.sq_r, norm_c = st.norm_c, norm_r = st.norm_r;
  for (size_t i = 0; i < count; ++i) {
    const double e_c = std::fabs(c[i] - s[i]), e_r = std::fabs(r[i] - s[i]);
    scale = std::max(scale, std::fabs(s[i]));
    err_c_inf = std::max(err_c_inf, e_c);
    sq_c += e_c * e_c;
    norm_c += s[i] * s[i];
    err_r_inf = std::max(err_r_inf, e_r);
    sq_r += e_r * e_r;
    norm_r += s[i] * s[i];
  }
  if (!std::isfinite(sq_c) || !std::isfinite(sq_r)) return false;
  st.scale = scale, st.err_c_inf = err_c_inf, st.err_r_inf = err_r_inf;
  st.sq_c = sq_c, st.sq_r = sq_r, st.norm_c = norm_c, st.norm_r = norm_r;
  if (!rule.per_element) return true;
  double elem_ratio = st.elem_ratio;
  for (size_t i = 0; i < count; ++i) {
    const double own = std::fabs(r[i] - s[i]);
    const double base = std::max(own, rule.floor * std::max(std::fabs(s[i]), 1.0));
    const double q = std::fabs(c[i] - s[i]) / base;
    elem_ratio = std::max(elem_ratio, q);
    if (!(q <= rule.ratio)) ++st.elem_bad, st.elem_first.offer(first + i, c[i], r[i], s[i]);
  }
  st.elem_ratio = elem_ratio;
  return true;
}

LeafVerdict compare_shadow(const Tensor& cand, const Tensor& ref, const Tensor& shadow,
                           const suite::Contract& k, bool per_element, const Yield& yield,
                           ShadowForm form, const Sensitivity& floor) {
  // Per element: |c-s| <= ratio * max(|r-s|, ulp_floor * eps * max(|s|, 1)). Below magnitude 1
  // the allowance is absolute (a formula accurate to a few ulps of 1, or a flushed subnormal,
  // passes); above it, relative to the element's own value.
  const ElementRule rule{per_element, k.ulp_floor * dtype_eps(ref.dtype), k.ratio};
  auto states = for_chunks<ShadowState>(
      cand, ref, &shadow, yield,
      [&rule](ShadowState& st, size_t first, size_t count, const double* c, const double* r,
              const double* s) {
        // Once the sums of squares overflowed (errors beyond 1e154), every block the slow way.
        const bool sums_finite = std::isfinite(st.sq_c) && std::isfinite(st.sq_r);
        if (!sums_finite || !shadow_block_finite(st, rule, first, count, c, r, s)) {
          shadow_block(st, rule, first, count, c, r, s);
        }
      },
      form);
  ShadowState a;
  for (const auto& st : states) {
    a.scale = std::max(a.scale, st.scale);
    a.err_c_inf = std::max(a.err_c_inf, st.err_c_inf);
    a.err_r_inf = std::max(a.err_r_inf, st.err_r_inf);
    a.sq_c += st.sq_c, a.sq_r += st.sq_r, a.norm_c += st.norm_c, a.norm_r += st.norm_r;
    a.invented.merge(st.invented);
    a.mismatched.merge(st.mismatched);
    a.elem_ratio = std::max(a.elem_ratio, st.elem_ratio);
    a.elem_bad += st.elem_bad;
    a.elem_first.merge(st.elem_first);
  }
  if (a.mismatched.index != SIZE_MAX && a.mismatched.index <= a.invented.index) {
    const auto& b = a.mismatched;
    return fail(Status::NonfiniteMismatch,
                fmt::format("flat index {}: got {} where PyTorch gives {} (float64: {})", b.index,
                            b.got, b.expected, b.float64));
  }
  if (a.invented.index != SIZE_MAX) {
    const auto& b = a.invented;
    return fail(Status::NonfiniteMismatch,
                fmt::format("flat index {}: got finite {} where PyTorch gives {}", b.index, b.got,
                            b.expected));
  }
  const double eps = dtype_eps(ref.dtype);
  const double scale = a.scale == 0 ? 1 : a.scale;
  const double l2_c = std::sqrt(a.sq_c) / (a.norm_c > 0 ? std::sqrt(a.norm_c) : 1.0);
  const double l2_r = std::sqrt(a.sq_r) / (a.norm_r > 0 ? std::sqrt(a.norm_r) : 1.0);
  const double ratio_inf =
      a.err_c_inf / std::max({a.err_r_inf, k.ulp_floor * eps * scale, floor.max_abs});
  const double ratio_l2 = l2_c / std::max({l2_r, k.ulp_floor * eps, floor.rel_l2});
  LeafVerdict v;
  v.ratio = std::max({ratio_inf, ratio_l2, a.elem_ratio});
  v.max_abs_err = a.err_c_inf;
  if (a.elem_bad) {
    const auto& b = a.elem_first;
    v.status = Status::NumericalMismatch;
    v.detail = fmt::format(
        "{} elements beyond {:.3g}x their own allowance (special values are checked per element; "
        "worst ratio {:.3g}; first at flat index {}: got {}, float64 gives {}, PyTorch {})",
        a.elem_bad, k.ratio, a.elem_ratio, b.index, b.got, b.float64, b.expected);
  } else if (!(v.ratio <= k.ratio)) {
    v.status = Status::NumericalMismatch;
    v.detail = fmt::format(
        "error ratio {:.3g} > {:.3g} (max |err| {:.3g} vs PyTorch's {:.3g}; "
        "rel L2 {:.3g} vs PyTorch's {:.3g}{})",
        v.ratio, k.ratio, a.err_c_inf, a.err_r_inf, l2_c, l2_r,
        floor.max_abs > 0 ? fmt::format("; small-result floor {:.3g}", floor.max_abs)
                          : std::string());
  }
  return v;
}

}  // namespace

LeafVerdict compare_leaf(const Tensor& cand, const Tensor& ref, const Tensor* shadow,
                         const suite::Contract& contract, bool per_element, const Yield& yield,
                         ShadowForm form, const Sensitivity& floor) {
  if (cand.shape != ref.shape) {
    return fail(Status::ShapeMismatch,
                fmt::format("shape {} expected {}", cand.shape_string(), ref.shape_string()));
  }
  if (cand.dtype != ref.dtype) {
    return fail(Status::DtypeMismatch,
                fmt::format("dtype {} expected {}", dtype_name(cand.dtype), dtype_name(ref.dtype)));
  }
  if (!is_floating(ref.dtype) || contract.tolerance == suite::Tolerance::Exact) {
    return compare_exact(cand, ref, yield);
  }
  const bool use_shadow =
      contract.tolerance == suite::Tolerance::Shadow && shadow && shadow->shape == ref.shape;
  if (!use_shadow) return compare_allclose(cand, ref, contract, yield);
  return compare_shadow(cand, ref, *shadow, contract, per_element, yield, form, floor);
}

}  // namespace kbx::verdict
