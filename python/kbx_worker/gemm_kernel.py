"""A plain Triton GEMM for `kbx calibrate` (see calibrate_mode._triton_gemm). Imported only when
calibrating, since importing Triton takes time that other modes need not spend."""

import torch
import triton
import triton.language as tl


@triton.jit
def _gemm_kernel(a, b, c, n, stride_bk, stride_bn, BM: tl.constexpr, BN: tl.constexpr,
                 BK: tl.constexpr, GROUP: tl.constexpr, ACC: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m, tiles_n = n // BM, n // BN
    group_tiles = GROUP * tiles_n
    first_m = (pid // group_tiles) * GROUP
    rows = tl.minimum(tiles_m - first_m, GROUP)  # the last group may be short
    pm = first_m + (pid % group_tiles) % rows
    pn = (pid % group_tiles) // rows
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=ACC)
    for k in range(0, n, BK):
        x = tl.load(a + rm[:, None] * n + (k + rk)[None, :])
        y = tl.load(b + (k + rk)[:, None] * stride_bk + rn[None, :] * stride_bn)
        acc += tl.dot(x, y, out_dtype=ACC)
    tl.store(c + rm[:, None] * n + rn[None, :], acc.to(c.dtype.element_ty))


def gemm(x, y, out, config):
    """out = x @ y for square x (row-major) and y (row- or column-major) whose size is a multiple
    of the blocks; config is (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages). int8 accumulates in
    int32, the rest in float32. Hopper's int8 tensor-core instructions want y column-major
    (K-major): pass y.t().contiguous().t() for the int8 rate."""
    n = x.shape[0]
    bm, bn, bk, warps, stages = config
    acc = tl.int32 if x.dtype == torch.int8 else tl.float32
    grid = ((n // bm) * (n // bn),)
    _gemm_kernel[grid](x, y, out, n, y.stride(0), y.stride(1), BM=bm, BN=bn, BK=bk, GROUP=8,
                       ACC=acc, num_warps=warps, num_stages=stages)
