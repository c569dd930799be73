"""The shadow error model in Python, for task authors' self-checks only.

The supervisor's C++ verdict is the one that counts; this mirrors it so that a task can be
checked while it is written (python -m kbx_worker.selfcheck).
"""

import torch

EPS = {torch.float64: 2.220446049250313e-16, torch.float32: 1.1920928955078125e-07,
       torch.float16: 0.0009765625, torch.bfloat16: 0.0078125,
       torch.complex64: 1.1920928955078125e-07, torch.complex128: 2.220446049250313e-16}


def error_ratio(c, r, s, ulp_floor=4.0):
    """max(ratio_inf, ratio_l2) of candidate c against shadow s, scaled by reference r's error."""
    if c.shape != r.shape or c.dtype != r.dtype:
        return float("inf")
    if not (c.is_floating_point() or c.is_complex()):
        return 0.0 if torch.equal(c, r) else float("inf")
    c64, r64, s64 = (x.detach().cpu().to(torch.complex128 if x.is_complex() else torch.float64)
                     for x in (c, r, s))
    if c64.is_complex():
        c64, r64, s64 = (torch.view_as_real(x) for x in (c64, r64, s64))
    fin_c, fin_r, fin_s = torch.isfinite(c64), torch.isfinite(r64), torch.isfinite(s64)

    def same_class(a, b):  # both NaN, or the same infinity
        return (torch.isnan(a) & torch.isnan(b)) | (torch.isinf(a) & (a == b))

    bad = ~fin_c & ~(same_class(c64, r64) | same_class(c64, s64))
    bad |= fin_c & ~fin_r & ~fin_s
    if bad.any():
        return float("inf")
    eps = EPS[c.dtype]
    use_c = fin_c & fin_s
    use_r = fin_r & fin_s
    if not use_c.any():
        return 0.0
    scale = s64[fin_s].abs().max().item() if fin_s.any() else 1.0
    scale = scale or 1.0
    err_c_inf = (c64 - s64)[use_c].abs().max().item()
    err_r_inf = (r64 - s64)[use_r].abs().max().item() if use_r.any() else 0.0
    norm_c = torch.linalg.vector_norm(s64[use_c]).item() or 1.0
    norm_r = torch.linalg.vector_norm(s64[use_r]).item() or 1.0
    err_c_l2 = torch.linalg.vector_norm((c64 - s64)[use_c]).item() / norm_c
    err_r_l2 = torch.linalg.vector_norm((r64 - s64)[use_r]).item() / norm_r if use_r.any() else 0.0
    ratio_inf = err_c_inf / max(err_r_inf, ulp_floor * eps * scale)
    ratio_l2 = err_c_l2 / max(err_r_l2, ulp_floor * eps)
    return max(ratio_inf, ratio_l2)
