// The statistics of kbx analyze (src/stats): the logistic GLM against closed forms and R's
// pchisq, separation and aliasing handled without a crash, and the seeded bootstrap.
#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"
#include "stats/bootstrap.h"
#include "stats/glm.h"

namespace kbx {
namespace {

/// Two groups, a: 3 of 10 correct, b: 7 of 10, grouped (one row per group) or not (one row per
/// trial).
struct TwoGroups {
  std::vector<std::string> labels;
  std::vector<double> successes, trials;
  explicit TwoGroups(bool grouped) {
    if (grouped) {
      labels = {"a", "b"};
      successes = {3, 7};
      trials = {10, 10};
      return;
    }
    for (int i = 0; i < 20; ++i) {
      labels.push_back(i < 10 ? "a" : "b");
      successes.push_back((i < 10 ? i < 3 : i - 10 < 7) ? 1 : 0);
      trials.push_back(1);
    }
  }
};

TEST(Glm, TwoGroupsMatchTheClosedForm) {
  for (bool grouped : {true, false}) {
    TwoGroups d(grouped);
    const auto g = stats::make_factor("g", d.labels);
    const auto fit =
        stats::fit_logit(stats::treatment_design({&g}, d.labels.size()), d.successes, d.trials);
    ASSERT_EQ(fit.terms, (std::vector<std::string>{"(Intercept)", "gb"}));
    EXPECT_TRUE(fit.converged);
    EXPECT_FALSE(fit.separation);
    EXPECT_NEAR(*fit.coefficients[0], std::log(3.0 / 7.0), 1e-10);
    EXPECT_NEAR(*fit.coefficients[1], 2 * std::log(7.0 / 3.0), 1e-10);
    EXPECT_NEAR(*fit.std_errors[0], std::sqrt(1 / 2.1), 1e-9);
    EXPECT_NEAR(*fit.std_errors[1], std::sqrt(2 / 2.1), 1e-9);
    const double dev = -4 * (3 * std::log(0.3) + 7 * std::log(0.7));
    EXPECT_NEAR(fit.deviance, dev, 1e-10);
    EXPECT_NEAR(fit.null_deviance, 40 * std::log(2.0), 1e-10);
    EXPECT_DOUBLE_EQ(fit.trials, 20);
    EXPECT_DOUBLE_EQ(fit.df_residual(), 18);
    EXPECT_NEAR(fit.explained(), 1 - dev / (40 * std::log(2.0)), 1e-12);
  }
}

TEST(Glm, InterceptOnlyIsTheNullModel) {
  TwoGroups d(true);
  const auto fit = stats::fit_logit(stats::treatment_design({}, 2), d.successes, d.trials);
  EXPECT_NEAR(*fit.coefficients[0], 0, 1e-12);
  EXPECT_NEAR(fit.deviance, fit.null_deviance, 1e-10);
  EXPECT_EQ(fit.rank, 1);
}

TEST(Glm, AliasedColumnIsLeftOutAsRDoes) {
  TwoGroups d(true);
  const auto g = stats::make_factor("g", d.labels);
  const auto h = stats::make_factor("h", d.labels);  // the same split under another name
  const auto fit = stats::fit_logit(stats::treatment_design({&g, &h}, 2), d.successes, d.trials);
  ASSERT_EQ(fit.terms.size(), 3u);
  EXPECT_TRUE(fit.coefficients[1]);
  EXPECT_FALSE(fit.coefficients[2]);  // R: NA
  EXPECT_FALSE(fit.std_errors[2]);
  EXPECT_EQ(fit.rank, 2);
  EXPECT_NEAR(*fit.coefficients[1], 2 * std::log(7.0 / 3.0), 1e-10);
}

TEST(Glm, SeparationIsReportedNotFatal) {
  // group a: nothing correct (a category where everything fails)
  const auto g = stats::make_factor("g", {"a", "b"});
  const auto design = stats::treatment_design({&g}, 2);
  const auto fit = stats::fit_logit(design, {0, 5}, {10, 10});
  EXPECT_TRUE(fit.separation);
  EXPECT_LT(*fit.coefficients[0], -10);  // running off to -infinity
  EXPECT_TRUE(std::isfinite(*fit.coefficients[1]));
  EXPECT_NEAR(fit.deviance, -2 * 10 * std::log(0.5), 1e-6);  // b's part; a's goes to 0
  EXPECT_LE(fit.iterations, 100);
  // capped: says it did not converge, still returns numbers
  const auto capped = stats::fit_logit(design, {0, 5}, {10, 10}, {3, 1e-12});
  EXPECT_FALSE(capped.converged);
  EXPECT_EQ(capped.iterations, 3);
  EXPECT_TRUE(std::isfinite(capped.deviance));
  // everything correct: a null deviance of 0, no NaN
  const auto all = stats::fit_logit(design, {10, 10}, {10, 10});
  EXPECT_EQ(all.null_deviance, 0);
  EXPECT_TRUE(std::isfinite(all.deviance));
  EXPECT_FALSE(std::signbit(all.null_deviance));
}

TEST(Glm, BadInputIsAnError) {
  const auto g = stats::make_factor("g", {"a", "b"});
  const auto design = stats::treatment_design({&g}, 2);
  EXPECT_THROW(stats::fit_logit(design, {11, 0}, {10, 10}), Error);
  EXPECT_THROW(stats::fit_logit(design, {1}, {10}), Error);
  EXPECT_THROW(stats::fit_logit(design, {0, 0}, {0, 0}), Error);
}

TEST(Glm, FactorLevelsInByteOrderFirstIsBaseline) {
  const auto f = stats::make_factor("method", {"zeta", "Alpha", "beta", "zeta"});
  EXPECT_EQ(f.levels, (std::vector<std::string>{"Alpha", "beta", "zeta"}));
  EXPECT_EQ(f.codes, (std::vector<int>{2, 0, 1, 2}));
  const auto d = stats::treatment_design({&f}, 4);
  EXPECT_EQ(d.columns, (std::vector<std::string>{"(Intercept)", "methodbeta", "methodzeta"}));
  EXPECT_EQ(d.values, (std::vector<double>{1, 0, 1, 1, 0, 0, 1, 1, 0, 1, 0, 1}));
}

TEST(Glm, ChiSquareTailMatchesR) {
  // R: pchisq(c(3.84, 10, 50, 0.5), c(1, 3, 5, 1), lower.tail = FALSE)
  EXPECT_NEAR(stats::chi_square_upper(3.84, 1), 5.0043521248705224e-02, 1e-14);
  EXPECT_NEAR(stats::chi_square_upper(10, 3), 1.8566135463043233e-02, 1e-14);
  EXPECT_NEAR(stats::chi_square_upper(50, 5) / 1.3857973367009593e-09, 1, 1e-12);
  EXPECT_NEAR(stats::chi_square_upper(0.5, 1), 4.7950012218695348e-01, 1e-14);
  EXPECT_EQ(stats::chi_square_upper(0, 2), 1);
  EXPECT_TRUE(std::isnan(stats::chi_square_upper(1, 0)));
}

TEST(Glm, LikelihoodRatioTestOfNestedModels) {
  TwoGroups d(true);
  const auto g = stats::make_factor("g", d.labels);
  const auto null = stats::fit_logit(stats::treatment_design({}, 2), d.successes, d.trials);
  const auto full = stats::fit_logit(stats::treatment_design({&g}, 2), d.successes, d.trials);
  const auto lr = stats::lr_test(null, full);
  EXPECT_EQ(lr.df, 1);
  EXPECT_NEAR(lr.statistic, null.deviance - full.deviance, 1e-12);
  EXPECT_NEAR(lr.p_value, stats::chi_square_upper(lr.statistic, 1), 1e-15);
  EXPECT_GT(lr.p_value, 0.05);  // 3/10 against 7/10: suggestive, not significant
  EXPECT_LT(lr.p_value, 0.1);
}

TEST(Bootstrap, QuantilesAreRType7) {
  std::vector<double> v;
  for (int i = 1; i <= 101; ++i) v.push_back(i);
  EXPECT_DOUBLE_EQ(stats::quantile_sorted(v, 0.025), 3.5);
  EXPECT_DOUBLE_EQ(stats::quantile_sorted(v, 0.5), 51);
  EXPECT_DOUBLE_EQ(stats::quantile_sorted({1, 2, 3, 4}, 0.5), 2.5);
  EXPECT_TRUE(std::isnan(stats::quantile_sorted({}, 0.5)));
  const auto ci = stats::percentile_interval({std::nan(""), 4, 1, 3, 2, 5});
  ASSERT_TRUE(ci);
  EXPECT_DOUBLE_EQ(ci->lo, 1.1);
  EXPECT_DOUBLE_EQ(ci->hi, 4.9);
  EXPECT_FALSE(stats::percentile_interval({std::nan("")}));
}

TEST(Bootstrap, ResamplerIsSeededAndUniform) {
  stats::Resampler a(42), b(42), c(43);
  std::vector<int> counts(10);
  bool differs = false;
  for (int i = 0; i < 100000; ++i) {
    const auto x = a.index(10);
    ASSERT_LT(x, 10u);
    EXPECT_EQ(x, b.index(10));
    differs = differs || x != c.index(10);
    ++counts[x];
  }
  EXPECT_TRUE(differs);
  for (int n : counts) EXPECT_NEAR(n, 10000, 500);
  EXPECT_NE(stats::group_seed(1, "methods/a"), stats::group_seed(1, "methods/b"));
  EXPECT_NE(stats::group_seed(1, "methods/a"), stats::group_seed(2, "methods/a"));
}

TEST(Bootstrap, ClusterBootstrapOfARate) {
  // 10 tasks, 3 correct: the rate's interval brackets 0.3, the same for the same seed
  std::vector<std::vector<double>> units;
  for (int i = 0; i < 10; ++i) units.push_back({1.0, i < 3 ? 1.0 : 0.0});
  auto rate = [](const std::vector<double>& s) {
    return std::vector<double>{s[1] / s[0], std::nan("")};
  };
  const auto ci = stats::cluster_bootstrap(units, rate, 2, 2000, 7);
  ASSERT_EQ(ci.size(), 2u);
  ASSERT_TRUE(ci[0]);
  EXPECT_FALSE(ci[1]);  // undefined on every replicate
  EXPECT_LE(ci[0]->lo, 0.3);
  EXPECT_GE(ci[0]->hi, 0.3);
  EXPECT_GE(ci[0]->lo, 0.0);
  EXPECT_LE(ci[0]->hi, 0.7);
  const auto again = stats::cluster_bootstrap(units, rate, 2, 2000, 7);
  EXPECT_EQ(again[0]->lo, ci[0]->lo);
  EXPECT_EQ(again[0]->hi, ci[0]->hi);
  // constant tasks: a zero-width interval
  const auto flat = stats::cluster_bootstrap({{1.0, 1.0}, {1.0, 1.0}}, rate, 2, 100, 1);
  EXPECT_EQ(flat[0]->lo, 1.0);
  EXPECT_EQ(flat[0]->hi, 1.0);
  EXPECT_FALSE(stats::cluster_bootstrap({}, rate, 2, 100, 1)[0]);
}

}  // namespace
}  // namespace kbx
