#pragma once
#include <map>
#include <string>
#include <vector>

#include "store/store.h"

namespace kbx::store {

/// Timing samples of a baseline (e.g. "compile": torch.compile of the reference) for each
/// performance case of a task, as measured under one environment fingerprint.
using CaseSamples = std::map<std::string, std::vector<double>>;

/// The cached samples of `kind` for a task (by its hash, so an edited task is timed again)
/// under `fingerprint`; empty when none are cached.
CaseSamples cached_baseline(Store& db, const std::string& fingerprint, const std::string& task,
                            const std::string& task_hash, const std::string& kind);

/// Replaces the cached samples of `kind` for a task under `fingerprint`.
void save_baseline(Store& db, const std::string& fingerprint, const std::string& task,
                   const std::string& task_hash, const std::string& kind,
                   const CaseSamples& samples);

}  // namespace kbx::store
