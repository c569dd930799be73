import inspect

import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def fused_fractional_max_pool2d_with_relu(input: torch.Tensor, kernel_size, output_size=None,
                                          output_ratio=None,
                                          return_indices=False) -> torch.Tensor:
    return F.fractional_max_pool2d(F.relu(input), kernel_size=kernel_size,
                                   output_size=output_size, output_ratio=output_ratio,
                                   return_indices=return_indices)


def _make(draw, shape, kernel_size, **kwargs):
    return lambda c: ((draw(c, shape), kernel_size), dict(kwargs))


def _normal(dtype=torch.float32):
    return lambda c, shape: c.randn(shape, dtype=dtype)


def _uniform(dtype=torch.float32):
    return lambda c, shape: c.uniform(shape, low=-1.0, high=3.0, dtype=dtype)


def _outliers(dtype=torch.float32):
    return lambda c, shape: c.outliers(shape, dtype=dtype)


def _distinct(dtype=torch.float32):
    """Positive values, all distinct within each plane (so the argmax index is unique)."""
    def draw(c, shape):
        u = c.uniform(shape).flatten(-2)
        ranks = u.argsort(dim=-1).argsort(dim=-1)
        return (ranks.to(torch.float32) + 1.0).reshape(shape).to(dtype)
    return draw


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    one = {"output_size": (1, 1)}
    return [
        Case("single_window_whole_plane", "edge", _make(_normal(), (2, 3, 5, 7), (5, 7), **one)),
        Case("single_window_last", "edge", _make(_normal(), (2, 4, 9, 8), (2, 3), **one)),
        Case("single_window_indices", "edge",
             _make(_distinct(), (3, 6, 7), (4, 5), return_indices=True, **one)),
        Case("single_window_indices_bf16", "edge",
             _make(_distinct(bf16), (2, 2, 9, 9), 9, return_indices=True, **one)),
        Case("all_negative_f16", "edge",
             lambda c: ((-c.uniform(2, 3, 6, 6, low=0.5, high=1.0, dtype=f16), 3), one)),
        Case("ratio_normal_f32", "small",
             _make(_normal(), (2, 3, 17, 19), 2, output_ratio=(0.5, 0.5)), dist="normal",
             random=True),
        Case("size_normal_f32_3d", "small",
             _make(_normal(), (4, 23, 23), 3, output_size=(7, 9)), dist="normal", random=True),
        Case("indices_uniform_f16", "small",
             _make(_uniform(f16), (1, 8, 33, 31), (2, 3), output_size=(16, 10),
                   return_indices=True), dist="uniform", random=True),
        Case("ratio_uniform_bf16", "small",
             _make(_uniform(bf16), (2, 4, 29, 37), (3, 2), output_ratio=(0.6, 0.7)),
             dist="uniform", random=True),
        Case("indices_outliers_f32", "small",
             _make(_outliers(), (2, 5, 26, 27), 2, output_size=(12, 11), return_indices=True),
             dist="outliers", random=True),
        Case("perf_f32_ratio07", "full",
             _make(_normal(), (32, 64, 112, 112), 2, output_ratio=(0.7, 0.7)), dist="normal",
             random=True),
        Case("perf_bf16_k3", "full",
             _make(_normal(bf16), (64, 128, 64, 64), 3, output_size=(40, 40)), dist="normal",
             random=True),
        Case("perf_f16_indices", "full",
             _make(_uniform(f16), (16, 256, 96, 96), 2, output_size=(45, 45),
                   return_indices=True), dist="uniform", random=True),
    ]


def cost(input, kernel_size, output_size=None, output_ratio=None, return_indices=False):
    kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else kernel_size
    h, w = input.shape[-2:]
    if output_size is None:
        output_size = (int(h * output_ratio[0]), int(w * output_ratio[1]))
    oh, ow = (output_size, output_size) if isinstance(output_size, int) else output_size
    planes = input.numel() // max(h * w, 1)
    outs = planes * oh * ow
    size = input.element_size()
    return {"flops": input.numel() + outs * kh * kw,
            "bytes": input.numel() * size + outs * (size + (8 if return_indices else 0))}


# --- judge for the random cases -----------------------------------------------------------------

def _starts(in_size, out_size, k, dtype):
    """(out_size, A) candidate window starts per output index and their validity mask: every start
    PyTorch's interval formula gives for some u in [0, 1), evaluated in float64, float32 and, for
    half inputs, with every step rounded to the input's dtype (its CPU kernel computes in scalar_t),
    over the breakpoints of the formula, points just beside them, midpoints, and every
    representable half-precision u."""
    if out_size == 1:
        return torch.tensor([[in_size - k]]), torch.ones(1, 1, dtype=torch.bool)
    alpha = (in_size - k) / (out_size - 1)
    i = torch.arange(out_size - 1, dtype=torch.float64)
    m = torch.arange(0, in_size + 2, dtype=torch.float64)
    bps = torch.cat([(m[:, None] / alpha - i[None, :]).flatten(), m / alpha, torch.zeros(1)])
    bps = bps[(bps >= 0) & (bps < 1)].unique()
    mids = (bps[1:] + bps[:-1]) / 2
    us = torch.cat([bps, bps + 1e-7, bps - 1e-7, mids, torch.tensor([0.0, 1.0 - 2 ** -24])])
    modes = [torch.float64, torch.float32]
    if dtype in (torch.float16, torch.bfloat16):
        modes.append(dtype)
        grid = torch.arange(1 << 16, dtype=torch.int32).to(torch.int16).view(dtype)
        grid = grid[torch.isfinite(grid)].double()
        us = torch.cat([us, grid[(grid >= 0) & (grid < 1)]])
    us = us[(us >= 0) & (us < 1)].unique()
    seqs = []
    for mode in modes:
        def r(t):
            return t.to(mode).double()
        u = r(us)[None, :]
        a = r(r(torch.tensor(float(in_size - k))) / r(torch.tensor(float(out_size - 1))))
        seqs.append(torch.trunc(r(r(i[:, None] + u) * a)) - torch.trunc(r(u * a)))
    seqs = torch.cat(seqs, dim=1).long()
    inside = (seqs >= 0) & (seqs <= in_size - k)
    present = torch.zeros(out_size - 1, in_size - k + 2, dtype=torch.bool)
    present.scatter_(1, torch.where(inside, seqs, in_size - k + 1), True)
    per = [row[:-1].nonzero().flatten().tolist() for row in present] + [[in_size - k]]
    width = max(len(p) for p in per)
    starts = torch.zeros(out_size, width, dtype=torch.long)
    valid = torch.zeros(out_size, width, dtype=torch.bool)
    for idx, p in enumerate(per):
        starts[idx, :len(p)] = torch.tensor(p, dtype=torch.long)
        valid[idx, :len(p)] = True
    return starts, valid


def _check_draw(res, x, kh, kw, oh, ow, rows, cols, want_indices):
    values, indices = (res if want_indices else (res, None)) if isinstance(res, (tuple, list)) \
        else (res, None)
    if want_indices != isinstance(res, (tuple, list)):
        return "return_indices decides whether a (values, indices) pair is returned"
    planes, h, w = x.shape
    if not isinstance(values, torch.Tensor) or values.dtype != x.dtype \
            or tuple(values.shape[-2:]) != (oh, ow) or values.numel() != planes * oh * ow:
        return "values have the wrong shape or dtype"
    v = values.detach().reshape(planes, oh, ow).to(x.device)
    p = F.max_pool2d(x.unsqueeze(1), (kh, kw), stride=1).squeeze(1)  # every window's maximum
    (rs, rv), (cs, cv) = rows, cols
    rs, rv, cs, cv = (t.to(x.device) for t in (rs, rv, cs, cv))
    row_ok = torch.zeros(planes, oh, dtype=torch.bool, device=x.device)
    col_any = torch.zeros(cs.shape[1], planes, oh, ow, dtype=torch.bool, device=x.device)
    elem_ok = torch.zeros(planes, oh, ow, dtype=torch.bool, device=x.device)
    for a in range(rs.shape[1]):
        any_b = torch.zeros(planes, oh, ow, dtype=torch.bool, device=x.device)
        for b in range(cs.shape[1]):
            match = (p[:, rs[:, a]][:, :, cs[:, b]] == v) & rv[:, a][None, :, None] \
                & cv[:, b][None, None, :]
            any_b |= match
            col_any[b] |= match
        elem_ok |= any_b
        row_ok |= any_b.all(dim=2)
    col_ok = torch.stack([col_any[b].all(dim=1) for b in range(cs.shape[1])]).any(dim=0)
    if not elem_ok.all():
        return f"{int((~elem_ok).sum())} values are not the maximum of any admissible window"
    if not row_ok.all() or not col_ok.all():
        return "an output row (or column) mixes windows of different row (column) starts"
    if indices is not None:
        if not isinstance(indices, torch.Tensor) or indices.dtype != torch.int64 \
                or indices.shape != values.shape:
            return "indices have the wrong shape or dtype"
        idx = indices.detach().reshape(planes, oh, ow).to(x.device)
        if ((idx < 0) | (idx >= h * w)).any():
            return "indices out of range"
        if not torch.equal(x.reshape(planes, -1).gather(1, idx.reshape(planes, -1)),
                           v.reshape(planes, -1)):
            return "an index does not point at its value"
        r, cidx = idx // w, idx % w
        in_r = ((r[..., None] >= rs[None, :, None, :]) & (r[..., None] < rs[None, :, None, :] + kh)
                & rv[None, :, None, :]).any(-1)
        in_c = ((cidx[..., None] >= cs[None, None, :, :]) & (cidx[..., None] < cs[None, None] + kw)
                & cv[None, None, :, :]).any(-1)
        if not (in_r & in_c).all():
            return "an index points outside every admissible window"
    return ""


def judge(args, kwargs, out_a, out_b):
    a = inspect.signature(fused_fractional_max_pool2d_with_relu).bind(*args, **kwargs)
    a.apply_defaults()
    x = F.relu(a.arguments["input"])
    ks = a.arguments["kernel_size"]
    kh, kw = (ks, ks) if isinstance(ks, int) else tuple(ks)
    h, w = x.shape[-2:]
    size, ratio = a.arguments["output_size"], a.arguments["output_ratio"]
    if size is None:
        size = (int(h * ratio[0]), int(w * ratio[1]))
    oh, ow = (size, size) if isinstance(size, int) else tuple(size)
    rows = _starts(h, oh, kh, x.dtype)
    cols = _starts(w, ow, kw, x.dtype)
    planes = x.reshape(-1, h, w)
    want = bool(a.arguments["return_indices"])
    for tag, res in (("a", out_a), ("b", out_b)):
        why = _check_draw(res, planes, kh, kw, oh, ow, rows, cols, want)
        if why:
            return {"ok": False, "message": f"draw {tag}: {why}", "stats": {}}
    va = out_a[0] if want else out_a
    vb = out_b[0] if want else out_b
    if torch.equal(va, vb):
        return {"ok": False, "message": "the two draws gave identical outputs", "stats": {}}
    frac = (va != vb).double().mean().item()
    return {"ok": True, "message": "", "stats": {"share_differing": frac}}
