#pragma once
#include <string>

namespace kbx::verdict {

/// What became of one job or case. Every job gets exactly one.
enum class Status {
  Passed,             ///< correct on every case
  StaticReject,       ///< the track's rules reject the source before it runs
  SyntaxError,        ///< the source does not parse
  NoEntry,            ///< the entry function is not defined
  BadInput,           ///< the candidate file itself is unusable (not UTF-8, empty)
  ImportError,        ///< importing the module raised
  CompileError,       ///< a Triton kernel failed to compile
  RuntimeError,       ///< the call raised
  CudaError,          ///< a CUDA error (illegal address, launch failure, device assert)
  Oom,                ///< out of memory
  Crash,              ///< the process died (signal, os._exit) without finishing
  Timeout,            ///< the wall-clock limit was hit; the process group was killed
  ShapeMismatch,      ///< output shape or structure differs
  DtypeMismatch,      ///< output dtype differs
  NumericalMismatch,  ///< error ratio beyond the contract
  NonfiniteMismatch,  ///< NaN/Inf where the reference has none, or the reverse
  InputMutation,      ///< an input the reference leaves alone was changed
  OutputViolation,    ///< tensor subclass, wrong device, aliasing an input, non-tensor output
  NoTritonLaunch,     ///< triton track: the call launched none of the candidate's kernels
  RandomContract,     ///< a random case failed its statistical contract
  Fallback,           ///< triton track: the timed calls ran mostly library kernels, not its own
  UnattributedWork,   ///< GPU work not launched by the timed call ran inside it (another thread)
  TimingMismatch,     ///< the in-process timer and the probe disagree, or the probe was defeated
  StaleResult,        ///< wrong on fresh values in the timed tensors: results cached across calls
  TimerTampered,      ///< the candidate replaced a timing function (events, synchronize, clock)
  ImpossibleSpeed,    ///< timed faster than the calibrated roofline allows (timing/guards.h)
  ReferenceError,     ///< the reference failed; not the candidate's fault
  HarnessError,       ///< kbx itself failed on this job (retried on the next run)
  KilledHarness,      ///< took the supervisor or the warm parent down twice while it ran; skipped
};

/// Stable lower-case name stored in the database ("numerical_mismatch").
const char* status_name(Status s);

/// Inverse of status_name; false for an unknown name.
bool parse_status(const std::string& name, Status* out);

/// False for the statuses that are no verdict on the candidate (reference_error, harness_error):
/// analyses leave those jobs out.
bool judges_kernel(Status s);

/// False when the candidate did not get as far as running: it did not parse, define its entry,
/// import or compile (syntax_error, no_entry, bad_input, import_error, compile_error). The
/// compile rate of `kbx analyze`.
bool compiled(Status s);

}  // namespace kbx::verdict
