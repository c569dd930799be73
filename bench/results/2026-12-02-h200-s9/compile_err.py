import sys, traceback, torch
sys.path.insert(0, "python")
from kbx_worker.taskload import Reference
from kbx_worker.casegen import Ctx, case_seed
for task in sys.argv[1:]:
    import tomllib
    entry = tomllib.load(open(f"tasks/{task}/task.toml", "rb"))["entry"]
    ref = Reference(f"tasks/{task}", entry, label=task)
    comp = torch.compile(ref.entry)
    for c in [c for c in ref.cases if c.tier == "full"]:
        args, kw = c.make(Ctx(case_seed(7, task, c.name), "cuda"))
        try:
            comp(*args, **kw); torch.cuda.synchronize(); print(task, c.name, "ok", flush=True)
        except Exception as e:
            print(task, c.name, "ERR", type(e).__name__, str(e)[:1500], flush=True)
            traceback.print_exc(limit=-4)
