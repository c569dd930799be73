"""Where the small-result floor binds (CPU, edge and small tiers): every task's reference runs
through the reference worker under SEED; for each result leaf with a sensitivity, the floor the
judge takes (per element the smaller of the movement and 4 float32 ulps of the term; the
largest) over what the judge allowed before it (PyTorch's own error, at least 4 ulps of the
largest result). Above 1: the floor loosens that leaf's allowance by that factor.

Usage: python3 floor_audit.py SEED   (needs torch; about 20 s)
Caveat: a shadow stored as float32 differences from the reference is added back here; a leaf
whose float64 shadow holds values beyond float32's range is read as the judge reads it only
approximately (its scale is underestimated, so its factor is overstated)."""

import glob
import os
import sys
import tempfile
import tomllib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402

from kbx_worker import reference_mode, tensorio  # noqa: E402

EPS = {torch.float32: 2.0 ** -23, torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7}
F32_EPS = 2.0 ** -23


class Events:
    def __init__(self):
        self.events = []

    def send(self, ev, **fields):
        self.events.append(dict(ev, **fields) if isinstance(ev, dict) else dict(fields, ev=ev))


def leaves_with_a_floor(task, task_dir, entry, seed):
    out = tempfile.mkdtemp(prefix="floor-audit-")
    events = Events()
    try:
        reference_mode.run({"device": "cpu", "jobs": [{
            "task": task, "task_dir": task_dir, "entry": entry, "seed": seed, "label": "a",
            "tiers": ["edge", "small"], "out_dir": out}]}, events)
    except SystemExit:
        pass
    for ev in events.events:
        if ev.get("ev") != "case" or "sensitivity" not in ev:
            continue
        shadow_path = os.path.join(out, ev["case"] + ".shadow.kbt")
        if not os.path.exists(shadow_path):
            continue
        ref = tensorio.read_kbt(os.path.join(out, ev["case"] + ".ref.kbt"))
        shadow = tensorio.read_kbt(shadow_path)
        for name, got in ev["sensitivity"].items():
            if name not in ref or name not in shadow:
                continue
            r, s = ref[name].double(), shadow[name].double()
            if name in ev.get("shadow_minus_ref", []):
                s = s + r
            both = torch.isfinite(r) & torch.isfinite(s)
            if not both.any():
                continue
            err = float((r - s)[both].abs().max())
            scale = float(s[torch.isfinite(s)].abs().max())
            before = max(err, 4 * EPS.get(ref[name].dtype, F32_EPS) * scale)
            floor = got["inf"]
            if before > 0:
                yield floor / before, ev["case"], name, floor, err, scale, got
    os.system(f"rm -rf {out}")


def main():
    seed = sys.argv[1] if len(sys.argv) > 1 else "audit"
    rows = []
    for toml in sorted(glob.glob(os.path.join(ROOT, "tasks", "*", "*", "task.toml"))):
        with open(toml, "rb") as f:
            meta = tomllib.load(f)
        if meta.get("contract", {}).get("tolerance", "shadow") != "shadow":
            continue
        task_dir = os.path.dirname(toml)
        task = "/".join(task_dir.split(os.sep)[-2:])
        for row in leaves_with_a_floor(task, task_dir, meta["entry"], seed):
            rows.append((row[0], task) + row[1:])
    binding = sorted((r for r in rows if r[0] > 1), reverse=True)
    print(f"seed {seed}: {len(rows)} leaves with a floor, {len(binding)} where it binds")
    for factor, task, case, name, floor, err, scale, got in binding:
        print(f"{factor:8.3g}x {task} {case} {name}: floor {floor:.3g}, PyTorch's error {err:.3g}, "
              f"scale {scale:.3g} (largest movement {got['moved']:.3g}, 4 ulps of the largest "
              f"term {4 * F32_EPS * got['terms']:.3g})")


if __name__ == "__main__":
    main()
