# The zero-dim case of Math/add over many seeds, judged as kbx judges it (shadow rule, ratio 10,
# 4 ulps), without and with the small-result floor, for an honest kernel that multiplies, then adds.
# Usage: python3 add_zero_dim_seeds.py N   (from the repository root or anywhere; needs torch)
import sys, torch, numpy as np
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
from kbx_worker.casegen import case_seed, Ctx
from kbx_worker import sensitivity
eps = 2.0**-23
old_bad = new_bad = 0
worst = 0
N = int(sys.argv[1])
for seed in range(N):
    cs = case_seed(str(seed), "Math/add", "zero_dim_f32")
    c = Ctx(cs, "cpu"); a = c.randn(()); b = c.randn(())
    r = torch.add(a, b, alpha=3).item()
    cand = float(np.float32(a.item()) + np.float32(3) * np.float32(b.item()))
    pr = ((a.double(), b.double()), {"alpha": 3})
    s_t = torch.add(*pr[0], **pr[1]); s = s_t.item()
    er, ec = abs(r - s), abs(cand - s)
    l2c = ec / abs(s) if s else 0; l2r = er / abs(s) if s else 0
    old = max(ec / max(er, 4 * eps * abs(s)) if max(er, 4*eps*abs(s)) else 0, l2c / max(l2r, 4 * eps))
    res, _ = sensitivity.measure(torch.add, sensitivity.cpu_copy(((a, b), {"alpha": 3})),
                                 {"arg0": a, "arg1": b}, cs, torch.add(a, b, alpha=3), [])
    fi, fl = res["out"]["inf"], res["out"]["l2"]
    new = max(ec / max(er, 4 * eps * abs(s), fi) if max(er, 4*eps*abs(s), fi) else 0, l2c / max(l2r, 4 * eps, fl))
    old_bad += old > 10; new_bad += new > 10; worst = max(worst, new)
print(f"{N} seeds: ratio > 10 without the floor {old_bad}, with it {new_bad}; worst ratio with it {worst:.3g}")
