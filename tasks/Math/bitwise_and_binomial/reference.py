import math

import torch

from kbx_worker.casegen import Case


def bitwise_and_binomial(input: torch.Tensor, other: torch.Tensor, total_count: torch.Tensor,
                         probs: torch.Tensor = None, logits: torch.Tensor = None) -> torch.Tensor:
    if probs is not None:
        return torch.distributions.Binomial(total_count=total_count, probs=probs).sample()
    if logits is not None:
        return torch.distributions.Binomial(total_count=total_count, probs=torch.sigmoid(logits)).sample()
    raise ValueError("Either `probs` or `logits` must be provided for Binomial distribution.")


def _ints(c, shape):
    return c.randint(0, 256, *shape, dtype=torch.int32), c.randint(0, 256, *shape, dtype=torch.int32)


def _counts(c, shape, low=1, high=50):
    return c.randint(low, high, *shape).to(torch.float32)


def _random(shape, count_shape=None, count_range=(1, 50), probs=None, logits=None):
    """A random case: probs(c) or logits(c) builds p; total_count has count_shape (default shape)."""
    def build(c):
        a, b = _ints(c, shape)
        n = _counts(c, count_shape or shape, *count_range)
        kw = {"probs": probs(c)} if probs is not None else {"logits": logits(c)}
        return (a, b, n), kw
    return build


def _deterministic_probs(c):
    """p in {0, 1}: every count is 0 or total_count."""
    a, b = _ints(c, (257, 33))
    p = c.bernoulli(257, 33).to(torch.float32)
    return (a, b, _counts(c, (257, 33))), {"probs": p}


def _deterministic_logits(c):
    """logits of +-inf give p of exactly 1 and 0."""
    a, b = _ints(c, (1031,))
    logits = torch.where(c.bernoulli(1031), float("inf"), float("-inf"))
    return (a, b, _counts(c, (1031,))), {"logits": logits}


def _zero_counts(c):
    a, b = _ints(c, (513,))
    return (a, b, torch.zeros(513, device=c.device)), {"probs": c.uniform(513)}


def _empty(c):
    a, b = _ints(c, (0,))
    return (a, b, torch.zeros(0, device=c.device)), {"probs": torch.zeros(0, device=c.device)}


def cases():
    uniform_p = lambda *s: (lambda c: c.uniform(*s, low=0.02, high=0.98))
    normal_logits = lambda *s: (lambda c: c.randn(*s, std=2.0))
    outlier_logits = lambda *s: (lambda c: c.outliers(*s, scale=10.0).clamp(-10.0, 10.0))
    return [
        Case("deterministic_probs", "edge", _deterministic_probs),
        Case("deterministic_logits", "edge", _deterministic_logits),
        Case("zero_counts", "edge", _zero_counts),
        Case("empty", "edge", _empty),
        Case("probs_uniform", "small", _random((4099,), probs=uniform_p(4099)), dist="uniform", random=True),
        Case("logits_normal", "small", _random((61, 67), logits=normal_logits(61, 67)), dist="logits",
             random=True),
        Case("logits_outliers", "small", _random((7919,), logits=outlier_logits(7919)), dist="outliers",
             random=True),
        Case("probs_broadcast_counts", "small", _random((257, 61), count_shape=(61,), probs=uniform_p(257, 61)),
             dist="uniform", random=True),
        Case("probs_large_counts", "small", _random((2053,), count_range=(100, 5000), probs=uniform_p(2053)),
             dist="uniform", random=True),
        Case("perf_probs_16M", "full", _random((4096, 4096), probs=uniform_p(4096, 4096)), dist="uniform",
             random=True),
        Case("perf_logits_64M", "full", _random((8192, 8192), logits=normal_logits(8192, 8192)), dist="logits",
             random=True),
        Case("perf_probs_odd_large_counts", "full",
             _random((12289, 3001), count_range=(100, 5000), probs=uniform_p(12289, 3001)), dist="uniform",
             random=True),
    ]


def cost(input, other, total_count, probs=None, logits=None):
    p = probs if probs is not None else logits
    n = torch.broadcast_shapes(total_count.shape, p.shape).numel()
    read = total_count.numel() * total_count.element_size() + p.numel() * p.element_size()
    return {"flops": 50 * n, "bytes": read + n * p.element_size()}


_CHUNK = 1 << 22
_BIN_EDGES = (0.25, 0.5, 0.75)


def _z(observed, mean, var):
    return (observed - mean) / math.sqrt(var) if var > 0 else (0.0 if observed == mean else math.inf)


def _chunk_problem(v, n, p):
    """Why a chunk of one draw cannot be a binomial sample, or None."""
    if not torch.isfinite(v).all():
        return "result has non-finite values"
    if not torch.equal(v, torch.round(v)):
        return "result has non-integer values"
    if (v < 0).any() or (v > n).any():
        return "result has counts outside [0, total_count]"
    if (v[p == 0] != 0).any() or (v[p == 1] != n[p == 1]).any():
        return "result is wrong where p is 0 or 1"
    return None


def judge(args, kwargs, out_a, out_b):
    total_count = args[2]
    probs, logits = kwargs.get("probs"), kwargs.get("logits")
    source = probs if probs is not None else logits
    shape = torch.broadcast_shapes(total_count.shape, source.shape)
    for label, x in (("a", out_a), ("b", out_b)):
        if not isinstance(x, torch.Tensor):
            return {"ok": False, "message": f"draw {label} is {type(x).__name__}, not a tensor", "stats": {}}
        if tuple(x.shape) != tuple(shape) or x.dtype != source.dtype:
            return {"ok": False, "message": f"draw {label} has shape {tuple(x.shape)} and dtype {x.dtype}, "
                                            f"expected {tuple(shape)} and {source.dtype}", "stats": {}}
    # On the device the draws are on (the judge reads them there): on a GPU the 117M counts of
    # the full cases take well under a second, against a minute on a loaded host's CPU.
    dev = out_a.device
    n_all = total_count.to(dev).expand(shape).reshape(-1)
    src_all = source.to(dev).expand(shape).reshape(-1)
    draws = [out_a.detach().reshape(-1), out_b.detach().to(dev).reshape(-1)]
    nbins = len(_BIN_EDGES) + 1
    # Per draw and bin of p: sums of the counts, of their deviations squared; per bin: sums of
    # the binomial means, variances and variances of the squared deviations.
    obs = torch.zeros(2, nbins, dtype=torch.float64, device=dev)
    dev2 = torch.zeros(2, nbins, dtype=torch.float64, device=dev)
    mom = torch.zeros(3, nbins, dtype=torch.float64, device=dev)
    differ = 0
    random_elems = 0
    edges = torch.tensor(_BIN_EDGES, dtype=torch.float64, device=dev)
    for start in range(0, n_all.numel(), _CHUNK):
        sl = slice(start, start + _CHUNK)
        n = n_all[sl].double()
        p = src_all[sl].double() if probs is not None else torch.sigmoid(src_all[sl].double())
        mean, var = n * p, n * p * (1 - p)
        # Variance of (X - np)^2 for a binomial: fourth central moment minus the variance squared.
        var_sq = var * (1 - 6 * p * (1 - p)) + 2 * var * var
        b = torch.bucketize(p, edges)
        for k, t in enumerate((mean, var, var_sq)):
            mom[k].index_add_(0, b, t)
        vs = [d[sl].double() for d in draws]
        for i, v in enumerate(vs):
            problem = _chunk_problem(v, n, p)
            if problem:
                return {"ok": False, "message": f"draw {'ab'[i]}: {problem}", "stats": {}}
            obs[i].index_add_(0, b, v)
            dev2[i].index_add_(0, b, (v - mean) ** 2)
        differ += int((vs[0] != vs[1]).sum())
        random_elems += int(((p > 0) & (p < 1) & (n > 0)).sum())
    obs, dev2, mom = obs.cpu(), dev2.cpu(), mom.cpu()
    stats = {}
    worst = 0.0
    for i, label in enumerate("ab"):
        z_total = _z(obs[i].sum().item(), mom[0].sum().item(), mom[1].sum().item())
        z_bins = [abs(_z(obs[i, k].item(), mom[0, k].item(), mom[1, k].item())) for k in range(nbins)]
        z_var = _z(dev2[i].sum().item(), mom[1].sum().item(), mom[2].sum().item())
        stats[f"z_total_{label}"] = z_total
        stats[f"z_bins_max_{label}"] = max(z_bins)
        stats[f"z_var_{label}"] = z_var
        worst = max(worst, abs(z_total), max(z_bins), abs(z_var))
    stats["frac_differ"] = differ / max(n_all.numel(), 1)
    if worst > 6.0:
        return {"ok": False, "message": f"counts are not binomial: a statistic is {worst:.1f} sigma off",
                "stats": stats}
    if random_elems >= 50 and differ == 0:
        return {"ok": False, "message": "the two draws under different seeds are identical", "stats": stats}
    return {"ok": True, "message": "", "stats": stats}
