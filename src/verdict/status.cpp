#include "verdict/status.h"

#include <array>
#include <utility>

namespace kbx::verdict {
namespace {
constexpr std::array<std::pair<Status, const char*>, 29> kNames = {{
    {Status::Passed, "passed"},
    {Status::StaticReject, "static_reject"},
    {Status::SyntaxError, "syntax_error"},
    {Status::NoEntry, "no_entry"},
    {Status::BadInput, "bad_input"},
    {Status::ImportError, "import_error"},
    {Status::CompileError, "compile_error"},
    {Status::RuntimeError, "runtime_error"},
    {Status::CudaError, "cuda_error"},
    {Status::Oom, "oom"},
    {Status::Crash, "crash"},
    {Status::Timeout, "timeout"},
    {Status::ShapeMismatch, "shape_mismatch"},
    {Status::DtypeMismatch, "dtype_mismatch"},
    {Status::NumericalMismatch, "numerical_mismatch"},
    {Status::NonfiniteMismatch, "nonfinite_mismatch"},
    {Status::InputMutation, "input_mutation"},
    {Status::OutputViolation, "output_violation"},
    {Status::NoTritonLaunch, "no_triton_launch"},
    {Status::RandomContract, "random_contract"},
    {Status::Fallback, "fallback"},
    {Status::UnattributedWork, "unattributed_work"},
    {Status::TimingMismatch, "timing_mismatch"},
    {Status::StaleResult, "stale_result"},
    {Status::TimerTampered, "timer_tampered"},
    {Status::ImpossibleSpeed, "impossible_speed"},
    {Status::ReferenceError, "reference_error"},
    {Status::HarnessError, "harness_error"},
    {Status::KilledHarness, "killed_harness"},
}};
}  // namespace

const char* status_name(Status s) {
  for (const auto& [status, name] : kNames) {
    if (status == s) return name;
  }
  return "unknown";
}

bool parse_status(const std::string& name, Status* out) {
  for (const auto& [status, n] : kNames) {
    if (name == n) {
      *out = status;
      return true;
    }
  }
  return false;
}

bool judges_kernel(Status s) {
  return s != Status::ReferenceError && s != Status::HarnessError;
}

bool compiled(Status s) {
  switch (s) {
    case Status::SyntaxError:
    case Status::NoEntry:
    case Status::BadInput:
    case Status::ImportError:
    case Status::CompileError: return false;
    default: return true;
  }
}

}  // namespace kbx::verdict
