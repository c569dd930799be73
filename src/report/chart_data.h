#pragma once
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "report/table.h"
#include "store/rounds.h"
#include "store/store.h"

namespace kbx::report {

/// What the charts of `kbx report` show, computed from the stored rows alone (one verdict per
/// method and task, as `kbx results` shows them; the rounds from every candidate's verdict).

/// One method's tasks as its fast_p curve and speedup distribution see them.
struct MethodSpeedups {
  std::string method;
  int tasks = 0;                           ///< its rows: one verdict per task
  int correct = 0;                         ///< rows whose status is passed
  std::vector<double> speedups;            ///< of the correct rows that have a speedup, ascending
  std::vector<std::string> speedup_tasks;  ///< the task of each speedup, in the same order
};

/// Each method's speedups, ordered by method.
std::vector<MethodSpeedups> method_speedups(const std::vector<store::Result>& results);

/// fast_p: the share of a method's tasks that are correct with a speedup above p; at p <= 0,
/// the share correct (a correct task without a timing counts there only). 0 without tasks.
double fast_p(const MethodSpeedups& m, double p);

/// The geometric mean of a method's speedups, if it has any.
std::optional<double> geomean_speedup(const MethodSpeedups& m);

/// The quartiles of a sample (linear interpolation between order statistics), for box plots.
struct Quartiles {
  double min = 0, q1 = 0, median = 0, q3 = 0, max = 0;
};
/// Quartiles of an ascending, non-empty sample.
Quartiles quartiles(const std::vector<double>& sorted);

/// Correct tasks of each method in each category.
struct CategoryCell {
  int correct = 0;
  int tasks = 0;
};

/// The category x method correctness grid; a method without tasks in a category has no cell.
struct Heatmap {
  std::vector<std::string> categories;                                ///< ascending
  std::vector<std::string> methods;                                   ///< ascending
  std::map<std::pair<std::string, std::string>, CategoryCell> cells;  ///< (category, method)
};
Heatmap correctness_heatmap(const std::vector<store::Result>& results);

/// One timed, passed case on the roofline chart.
struct RooflinePoint {
  std::string method;
  std::string task;
  std::string case_name;
  double intensity = 0;  ///< FLOPs per byte of the cost model (0: a case without FLOPs)
  double fraction = 0;   ///< roofline time / candidate median time (report/table.h)
  std::string basis;     ///< the peaks the roofline time came from
};

/// The roofline points and why the other timed cases are not among them.
struct RooflineData {
  std::vector<RooflinePoint> points;
  int timed_cases = 0;   ///< passed cases with a candidate median
  int uncalibrated = 0;  ///< of those, in runs without a calibration
  int without_cost = 0;  ///< of those, without bytes in the cost model or without a fraction
};
/// Points for every passed, timed case with a cost model, against its run's calibration.
RooflineData roofline_points(const std::vector<store::Result>& results,
                             const RunCalibrations& calibrations);

/// A refinement method's correctness at one round.
struct RoundPoint {
  int round = 0;
  int tasks = 0;           ///< tasks with a candidate in this round
  int correct = 0;         ///< of those, tasks with a correct candidate in this round
  int correct_so_far = 0;  ///< tasks with a correct candidate in this round or an earlier one
};

/// A method's per-round correctness, over the tasks any of its rounds attempted.
struct Trajectory {
  std::string method;
  int tasks = 0;                   ///< distinct tasks over all of its rounds
  std::vector<RoundPoint> rounds;  ///< ascending rounds
};
/// One trajectory per method with rounds, ordered by method.
std::vector<Trajectory> trajectories(const std::vector<store::RoundVerdict>& verdicts);

}  // namespace kbx::report
