"""What a task's reference.py uses to declare its input cases.

A reference.py defines `cases()` returning a list of Case. Each Case has a name, a tier
("edge", "small" or "full") and a `make(ctx)` function returning `(args, kwargs)` for the entry
function. `ctx` draws every random value from a generator that the supervisor seeds, so the same
seed gives the same inputs and a fresh seed gives fresh ones.
"""

import hashlib
import re

import torch

TIERS = ("edge", "small", "full")


class Case:
    """One input case of a task: name, tier, builder, and the distribution it exercises."""

    def __init__(self, name, tier, make, dist="", random=False):
        if tier not in TIERS:
            raise ValueError(f"case {name}: tier must be one of {TIERS}, got {tier!r}")
        if not re.fullmatch(r"[A-Za-z0-9_-]+", name):
            raise ValueError(f"case name {name!r}: use letters, digits, '_' and '-' only")
        self.name = name
        self.tier = tier
        self.make = make
        self.dist = dist
        self.random = random


def case_seed(seed, task, case_name):
    """63-bit seed of one case, independent of the order cases are run in."""
    digest = hashlib.sha256(f"{seed}:{task}:{case_name}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


def _shape(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, torch.Size)):
        return tuple(shape[0])
    return tuple(shape)


class Ctx:
    """Random-value source handed to Case.make; every draw comes from one seeded generator."""

    def __init__(self, seed, device):
        self.device = torch.device(device)
        self.seed = seed
        self.gen = torch.Generator(device=self.device)
        self.gen.manual_seed(seed)
        self.used_special = False  # set by special(): the case holds special values

    def _cast(self, t, dtype):
        return t.to(dtype) if t.dtype != dtype else t

    def randn(self, *shape, dtype=torch.float32, mean=0.0, std=1.0):
        """Normal values."""
        t = torch.randn(_shape(shape), generator=self.gen, device=self.device, dtype=torch.float32)
        return self._cast(t * std + mean, dtype)

    def uniform(self, *shape, low=0.0, high=1.0, dtype=torch.float32):
        """Uniform values in [low, high)."""
        t = torch.rand(_shape(shape), generator=self.gen, device=self.device, dtype=torch.float32)
        return self._cast(t * (high - low) + low, dtype)

    def outliers(self, *shape, dtype=torch.float32, frac=0.01, scale=1000.0):
        """Normal values with a fraction `frac` of entries multiplied by `scale` (heavy tails)."""
        base = torch.randn(_shape(shape), generator=self.gen, device=self.device)
        pick = torch.rand(_shape(shape), generator=self.gen, device=self.device) < frac
        return self._cast(torch.where(pick, base * scale, base), dtype)

    def randint(self, low, high, *shape, dtype=torch.int64):
        """Integers in [low, high)."""
        t = torch.randint(low, high, _shape(shape), generator=self.gen, device=self.device)
        return self._cast(t, dtype)

    def randperm(self, n, dtype=torch.int64):
        return torch.randperm(n, generator=self.gen, device=self.device).to(dtype)

    def bernoulli(self, *shape, p=0.5):
        """Boolean mask, True with probability p."""
        return torch.rand(_shape(shape), generator=self.gen, device=self.device) < p

    def special(self, dtype=torch.float32, inf=True, nan=True):
        """1-D tensor of special values: zeros of both signs, extremes, subnormals, and (unless
        turned off) infinities and NaN. Turn off a class where PyTorch's answer for it differs
        between CPU and CUDA or from the mathematical limit."""
        self.used_special = True
        fi = torch.finfo(dtype)
        vals = [0.0, -0.0, 1.0, -1.0, fi.tiny, -fi.tiny, fi.tiny / 4, fi.max, -fi.max, fi.eps,
                0.5, -2.5, 3.0, 1e-3, -7.25]
        if inf:
            vals += [float("inf"), float("-inf")]
        if nan:
            vals += [float("nan")]
        return torch.tensor(vals, dtype=dtype, device=self.device)

    def finite_special(self, dtype=torch.float32):
        """special() without inf and nan."""
        return self.special(dtype, inf=False, nan=False)
