// The GPU's timing slot asked for from inside the worker's process, at its first GPU work
// (kbx_probe_slot_arm): which CUDA calls count as GPU work, and the pipe protocol's one request.
#pragma once

#include <string>
#include <string_view>

namespace kbx::probe {

/// Whether a CUDA driver or runtime API function (its name as CUPTI gives it) puts work on the
/// GPU: a kernel or graph launch, a copy or a fill. Allocations, module loads and queries do not.
bool is_gpu_work_api(std::string_view function_name);

/// The worker's "slot_wanted" event (one JSON line, `api` naming the call that wanted it, cut
/// to letters, digits and '_').
std::string slot_wanted_line(std::string_view api);

/// Asks the supervisor for the slot as the worker's Python side does (proto.Channel.
/// wait_for_slot): the "slot_wanted" line on `event_fd`, then one line read from `request_fd`.
/// True when it is "go"; false (with `error` set) when the pipe closed, failed or said anything
/// else. Blocks until the supervisor answers, as the Python side does.
bool ask_for_slot(int event_fd, int request_fd, std::string_view api, std::string* error);

}  // namespace kbx::probe
