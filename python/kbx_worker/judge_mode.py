"""Judge mode: apply a task's statistical contract (judge()) to a candidate's random outputs.

Runs in a process of its own, never the candidate's: it reads the case's inputs and the
candidate's two draws from files and calls the task reference's judge().
"""

import traceback

from .argcodec import decode_call
from .calls import classify_exception
from .taskload import Reference
from .tensorio import read_kbt, read_kbt_header


def _rebuild(leaves, structure):
    values = list(leaves.values())
    if structure == "single":
        return values[0] if values else None
    return tuple(values)


def run(request, channel):
    device = request.get("device", "cpu")
    refs = {}
    for job in request["jobs"]:
        try:
            key = job["task_dir"]
            if key not in refs:
                refs[key] = Reference(job["task_dir"], job["entry"], label=f"judge{len(refs)}")
            judge = getattr(refs[key].module, "judge")
            # The first draw's outputs passed kbx's comparison; a second draw of other names,
            # dtypes or shapes breaks the contract before the judge reads it (a header that
            # declares terabytes would otherwise fail the judge's own allocation: an oom, which
            # is kbx's and not a verdict).
            if read_kbt_header(job["out_b"]) != read_kbt_header(job["out_a"]):
                channel.send("judged", case=job["case"], ok=False,
                             message="the second draw's outputs differ from the first's in "
                                     "their names, dtypes or shapes")
                continue
            args, kwargs = decode_call(job["call"], read_kbt(job["inputs"], device))
            out_a = _rebuild(read_kbt(job["out_a"], device), job["structure"])
            out_b = _rebuild(read_kbt(job["out_b"], device), job["structure"])
            verdict = judge(list(args), kwargs, out_a, out_b)
            channel.send("judged", case=job["case"], ok=bool(verdict.get("ok")),
                         message=str(verdict.get("message", ""))[:2000],
                         stats={k: float(v) for k, v in verdict.get("stats", {}).items()})
        except Exception as exc:
            # oom: the judge's own lack of the GPU's memory (the jobs and references beside it
            # hold it), kbx's fault, not the candidate's broken contract (session 34 on the
            # H100: Math/bitwise_and_binomial, the reference as its own candidate)
            channel.send("judged", case=job["case"], ok=False,
                         message=f"judge failed: {type(exc).__name__}: {exc}"[:2000],
                         trace=traceback.format_exc()[-3000:],
                         oom=classify_exception(exc) == "oom")
