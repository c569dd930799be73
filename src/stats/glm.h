#pragma once
#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace kbx::stats {

/// A categorical predictor: its levels and each row's level.
struct Factor {
  std::string name;                 ///< "category", "method": the prefix of its terms
  std::vector<std::string> levels;  ///< in byte order (R's sort(method = "radix")); the first
                                    ///< is the baseline of treatment contrasts
  std::vector<int> codes;           ///< per row, its index into levels
};

/// A factor from per-row labels, its levels the distinct labels in byte order.
Factor make_factor(std::string name, const std::vector<std::string>& labels);

/// A model matrix with named columns, row-major.
struct Design {
  std::vector<std::string> columns;
  std::vector<double> values;  ///< rows() x columns.size()
  std::size_t rows() const { return columns.empty() ? 0 : values.size() / columns.size(); }
};

/// "(Intercept)", then for each factor one 0/1 column per level but the first (treatment
/// contrasts, R's default), named as R names them: factor name followed by the level.
/// Every factor must have one code per row (rows).
Design treatment_design(const std::vector<const Factor*>& factors, std::size_t rows);

/// When IRLS stops: R's criterion |dev - dev_old| / (|dev| + 0.1) < tolerance, or the cap.
struct GlmOptions {
  int max_iterations = 100;
  double tolerance = 1e-12;
};

/// A fitted binomial GLM with the logit link. Deviances are those of the individual Bernoulli
/// trials (-2 log-likelihood), as R's glm gives on one row per trial, whatever the grouping.
struct GlmFit {
  std::vector<std::string> terms;  ///< the design's columns
  /// Per term; nullopt for a column aliased with earlier ones (R's NA), dropped from the fit.
  std::vector<std::optional<double>> coefficients, std_errors;
  double deviance = 0;       ///< residual deviance
  double null_deviance = 0;  ///< the intercept-only model's deviance
  double trials = 0;         ///< Bernoulli trials (rows of the ungrouped data)
  int rank = 0;              ///< columns estimated
  int iterations = 0;
  bool converged = false;  ///< the criterion was met within max_iterations
  /// Some fitted probability is within 1e-8 of 0 or 1: (quasi-)separation, e.g. a category where
  /// every kernel fails; the deviance is then near its limit and the coefficients mean little.
  bool separation = false;
  double df_residual() const { return trials - rank; }
  /// 1 - deviance / null_deviance: the share of the null deviance the predictors explain (0 for
  /// the null model itself, not a rounding error below it).
  double explained() const {
    return null_deviance > 0 ? std::max(0.0, 1 - deviance / null_deviance) : 0;
  }
};

/// Fits P(success) = logistic(x b) to grouped binomial data (per design row: successes out of
/// trials; a row may stand for many trials with the same predictors) by iteratively reweighted
/// least squares, each step a Householder QR solve (Eigen), started as R starts it. Aliased
/// columns are found first (pivoted QR on the columns so far, in order) and left out. Never
/// throws on separation or non-convergence: it says so in the fit. Throws Error on bad input
/// (sizes that disagree, successes outside [0, trials], no trials).
GlmFit fit_logit(const Design& design, const std::vector<double>& successes,
                 const std::vector<double>& trials, const GlmOptions& options = {});

/// A likelihood-ratio test of a model against a smaller one nested in it.
struct LrTest {
  double statistic = 0;  ///< deviance(smaller) - deviance(larger)
  int df = 0;            ///< rank(larger) - rank(smaller)
  double p_value = 1;    ///< chi-square upper tail
};

/// The likelihood-ratio test of `larger` against `smaller`, nested in it.
LrTest lr_test(const GlmFit& smaller, const GlmFit& larger);

/// P(X > x) for X chi-square with df degrees of freedom (Eigen's incomplete gamma); 1 for x <= 0.
double chi_square_upper(double x, int df);

}  // namespace kbx::stats
