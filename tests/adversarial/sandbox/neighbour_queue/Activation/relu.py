"""Timing attack (session 30): slow the eager baselines timed beside it. At import, outside the
GPU's timing slot, it queues about 40 s of float32 matmuls on a stream of its own, and returns
at once: while kbx freezes it for other jobs' timed loops (the quiet host), its queue keeps
running, and without MPS the GPU time-slices between its context and theirs (on the H200 a
3 ms call took 2x as long). The eager baselines of tasks whose references run meanwhile would be
slower, every speedup of its method on them higher. kbx's reference worker times a baseline only
once the GPU has drained other processes' work; one that never drains is timed again alone after
the rest of the run. The same queue would slow the neighbours' own timed calls, a gain wherever a
candidate is scored against the others of its run (an RL loop's group of samples): their timers
settle too, and a job whose timed case met other work that did not drain runs again alone
(session 31). Its own answers are right (torch's relu): it passes, and its neighbours' baselines
and timings must match those of a run without it (bench/neighbour_attack_gpu.sh)."""
import torch
import torch.nn.functional as F


def _queue_seconds_of_matmuls(seconds=40.0):
    if not torch.cuda.is_available():
        return None
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        a = torch.randn(8192, 8192, device="cuda")
        for _ in range(int(seconds / 0.155)):  # one 8192^3 float32 matmul: about 155 ms (H200)
            a = a @ a * 1e-4
    return side


_SIDE = _queue_seconds_of_matmuls()


def relu(input: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    return F.relu(input, inplace=inplace)
