#include "stats/glm.h"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <map>
#include <unsupported/Eigen/SpecialFunctions>

#include "common/error.h"

namespace kbx::stats {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

// R's logit link (family.c): eta beyond +-30 saturates at DBL_EPSILON from 0 or 1.
constexpr double kThresh = 30;

double inverse_logit(double eta) {
  const double t = eta < -kThresh ? DBL_EPSILON : eta > kThresh ? 1 / DBL_EPSILON : std::exp(eta);
  return t / (1 + t);
}

/// d mu / d eta, floored at DBL_EPSILON as R floors it.
double logit_slope(double eta) {
  if (eta > kThresh || eta < -kThresh) return DBL_EPSILON;
  const double e = std::exp(eta);
  return e / ((1 + e) * (1 + e));
}

/// -2 log-likelihood of successes s out of n at probability mu (0 log 0 = 0).
double bernoulli_deviance(const VectorXd& s, const VectorXd& n, const VectorXd& mu) {
  double ll = 0;
  for (Eigen::Index i = 0; i < s.size(); ++i) {
    if (s[i] > 0) ll += s[i] * std::log(mu[i]);
    if (n[i] - s[i] > 0) ll += (n[i] - s[i]) * std::log1p(-mu[i]);
  }
  return -2 * ll + 0.0;  // + 0.0: no negative zero for a perfect fit
}

/// The columns of x, in order, that are not linear combinations of the ones kept before them
/// (R keeps the first of aliased columns and reports NA for the later ones).
std::vector<int> independent_columns(const MatrixXd& x) {
  std::vector<int> kept;
  for (int j = 0; j < x.cols(); ++j) {
    MatrixXd trial(x.rows(), static_cast<Eigen::Index>(kept.size()) + 1);
    for (size_t k = 0; k < kept.size(); ++k)
      trial.col(static_cast<Eigen::Index>(k)) = x.col(kept[k]);
    trial.col(trial.cols() - 1) = x.col(j);
    Eigen::ColPivHouseholderQR<MatrixXd> qr(trial);
    qr.setThreshold(1e-9);
    if (qr.rank() == trial.cols()) kept.push_back(j);
  }
  return kept;
}

void check_input(const Design& d, const std::vector<double>& successes,
                 const std::vector<double>& trials) {
  const size_t rows = d.rows();
  if (d.columns.empty() || d.values.size() != rows * d.columns.size()) {
    throw Error("glm: the design has no columns or a ragged matrix");
  }
  if (successes.size() != rows || trials.size() != rows) {
    throw Error(fmt::format("glm: {} design rows but {} successes and {} trials", rows,
                            successes.size(), trials.size()));
  }
  double total = 0;
  for (size_t i = 0; i < rows; ++i) {
    if (!(trials[i] >= 0) || !(successes[i] >= 0) || successes[i] > trials[i]) {
      throw Error(
          fmt::format("glm: row {}: {} successes out of {} trials", i, successes[i], trials[i]));
    }
    total += trials[i];
  }
  if (total <= 0) throw Error("glm: no trials to fit");
}

/// The IRLS iterations on the kept columns; fills coefficients, iterations, converged and mu.
struct Irls {
  VectorXd coef, mu, weights;
  int iterations = 0;
  bool converged = false;
  double deviance = 0;
};

Irls run_irls(const MatrixXd& x, const VectorXd& s, const VectorXd& n, const GlmOptions& o) {
  Irls r;
  const VectorXd y = s.cwiseQuotient(n);
  r.mu = (n.cwiseProduct(y).array() + 0.5) / (n.array() + 1);  // R's binomial mustart
  VectorXd eta = (r.mu.array() / (1 - r.mu.array())).log();
  double dev_old = bernoulli_deviance(s, n, r.mu);
  r.deviance = dev_old;
  r.coef = VectorXd::Zero(x.cols());
  for (r.iterations = 1; r.iterations <= o.max_iterations; ++r.iterations) {
    VectorXd z(y.size()), w(y.size());
    for (Eigen::Index i = 0; i < y.size(); ++i) {
      const double slope = logit_slope(eta[i]);
      z[i] = eta[i] + (y[i] - r.mu[i]) / slope;
      w[i] = std::sqrt(n[i] * slope * slope / (r.mu[i] * (1 - r.mu[i])));
    }
    Eigen::ColPivHouseholderQR<MatrixXd> qr(w.asDiagonal() * x);
    VectorXd next = qr.solve(w.cwiseProduct(z));
    if (!next.allFinite()) break;  // a degenerate step: keep the last finite fit
    const VectorXd old = r.coef;
    double dev = 0;
    for (int halving = 0; halving < 30; ++halving) {  // R halves a step whose deviance is not
      eta = x * next;                                 // finite
      r.mu = eta.unaryExpr(&inverse_logit);
      dev = bernoulli_deviance(s, n, r.mu);
      if (std::isfinite(dev)) break;
      next = (next + old) / 2;
    }
    r.coef = next;
    r.deviance = dev;
    if (std::abs(dev - dev_old) / (std::abs(dev) + 0.1) < o.tolerance) {
      r.converged = true;
      break;
    }
    dev_old = dev;
  }
  r.iterations = std::min(r.iterations, o.max_iterations);
  r.weights = n.array() * r.mu.array() * (1 - r.mu.array());
  return r;
}

}  // namespace

Factor make_factor(std::string name, const std::vector<std::string>& labels) {
  Factor f;
  f.name = std::move(name);
  f.levels = labels;
  std::sort(f.levels.begin(), f.levels.end());
  f.levels.erase(std::unique(f.levels.begin(), f.levels.end()), f.levels.end());
  std::map<std::string, int> index;
  for (size_t i = 0; i < f.levels.size(); ++i) index[f.levels[i]] = static_cast<int>(i);
  f.codes.reserve(labels.size());
  for (const auto& l : labels) f.codes.push_back(index.at(l));
  return f;
}

Design treatment_design(const std::vector<const Factor*>& factors, std::size_t rows) {
  Design d;
  d.columns.push_back("(Intercept)");
  for (const auto* f : factors) {
    if (f->codes.size() != rows) {
      throw Error(
          fmt::format("glm: factor {} has {} codes for {} rows", f->name, f->codes.size(), rows));
    }
    for (size_t k = 1; k < f->levels.size(); ++k) d.columns.push_back(f->name + f->levels[k]);
  }
  const size_t p = d.columns.size();
  d.values.assign(rows * p, 0.0);
  for (size_t i = 0; i < rows; ++i) {
    d.values[i * p] = 1;
    size_t offset = 1;
    for (const auto* f : factors) {
      if (f->codes[i] > 0) d.values[i * p + offset + f->codes[i] - 1] = 1;
      offset += f->levels.size() - 1;
    }
  }
  return d;
}

GlmFit fit_logit(const Design& design, const std::vector<double>& successes,
                 const std::vector<double>& trials, const GlmOptions& options) {
  check_input(design, successes, trials);
  std::vector<Eigen::Index> used;  // rows with trials: the others carry no information
  for (size_t i = 0; i < trials.size(); ++i) {
    if (trials[i] > 0) used.push_back(static_cast<Eigen::Index>(i));
  }
  const auto p = static_cast<Eigen::Index>(design.columns.size());
  MatrixXd x(static_cast<Eigen::Index>(used.size()), p);
  VectorXd s(x.rows()), n(x.rows());
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    const auto i = static_cast<size_t>(used[static_cast<size_t>(r)]);
    for (Eigen::Index j = 0; j < p; ++j) x(r, j) = design.values[i * static_cast<size_t>(p) + j];
    s[r] = successes[i];
    n[r] = trials[i];
  }
  const std::vector<int> kept = independent_columns(x);
  MatrixXd xk(x.rows(), static_cast<Eigen::Index>(kept.size()));
  for (size_t k = 0; k < kept.size(); ++k) xk.col(static_cast<Eigen::Index>(k)) = x.col(kept[k]);

  const Irls irls = run_irls(xk, s, n, options);
  GlmFit fit;
  fit.terms = design.columns;
  fit.coefficients.assign(design.columns.size(), std::nullopt);
  fit.std_errors.assign(design.columns.size(), std::nullopt);
  const MatrixXd info = xk.transpose() * irls.weights.asDiagonal() * xk;
  const MatrixXd cov = info.ldlt().solve(MatrixXd::Identity(xk.cols(), xk.cols()));
  for (size_t k = 0; k < kept.size(); ++k) {
    const auto kk = static_cast<Eigen::Index>(k);
    fit.coefficients[static_cast<size_t>(kept[k])] = irls.coef[kk];
    fit.std_errors[static_cast<size_t>(kept[k])] = std::sqrt(cov(kk, kk));
  }
  fit.deviance = irls.deviance;
  fit.trials = n.sum();
  const double rate = s.sum() / fit.trials;
  fit.null_deviance =
      bernoulli_deviance(VectorXd::Constant(1, s.sum()), VectorXd::Constant(1, fit.trials),
                         VectorXd::Constant(1, rate));
  fit.rank = static_cast<int>(kept.size());
  fit.iterations = irls.iterations;
  fit.converged = irls.converged;
  fit.separation = (irls.mu.array() < 1e-8).any() || (irls.mu.array() > 1 - 1e-8).any();
  return fit;
}

LrTest lr_test(const GlmFit& smaller, const GlmFit& larger) {
  LrTest t;
  t.statistic = smaller.deviance - larger.deviance;
  t.df = larger.rank - smaller.rank;
  t.p_value = chi_square_upper(t.statistic, t.df);
  return t;
}

double chi_square_upper(double x, int df) {
  if (df <= 0) return std::nan("");
  if (!(x > 0)) return 1;
  return Eigen::numext::igammac(df / 2.0, x / 2.0);
}

}  // namespace kbx::stats
