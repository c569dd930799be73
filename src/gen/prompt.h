#pragma once
#include <map>
#include <optional>
#include <string>

#include "store/calibration.h"
#include "suite/task.h"

namespace kbx::gen {

/// The values of a template's {{placeholders}}, by name.
using Values = std::map<std::string, std::string>;

/// Fills each {{name}} of a template (spaces inside the braces allowed) from values. A name with
/// no value is an Error naming the template file and the placeholder, with the names it knows.
std::string render(const std::string& text, const std::string& file, const Values& values);

/// What a prompt says about a task (the placeholders of methods/templates/README.md): task,
/// category, name, entry, signature, summary, reference_code, dtypes, tolerance, contract,
/// cases (each case's name and tier from reference.py: dtypes and sizes), track, track_rules,
/// gpu, peaks.
Values task_values(const suite::Task& task, const std::string& track,
                   const std::optional<store::Calibration>& calibration);

/// A reply's code: the last ```python (or ```py, or bare ```) fenced block that defines the
/// entry function (`def entry(`), else none with `*why` saying what the reply lacked.
std::optional<std::string> extract_code(const std::string& reply, const std::string& entry,
                                        std::string* why);

}  // namespace kbx::gen
