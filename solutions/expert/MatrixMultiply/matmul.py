import torch
import triton
import triton.language as tl


def _cfg(bm, bn, bk, warps, stages, fp32):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "FP32_CFG": fp32},
                         num_warps=warps, num_stages=stages)


_CONFIGS = [
    # float16 / bfloat16 on tensor cores
    _cfg(128, 256, 64, 8, 3, False),
    _cfg(128, 128, 64, 8, 4, False),
    _cfg(128, 128, 64, 4, 4, False),
    _cfg(64, 128, 64, 4, 4, False),
    # float32 at full precision (FMA path: smaller K steps)
    _cfg(128, 128, 32, 8, 3, True),
    _cfg(64, 128, 32, 4, 3, True),
    _cfg(64, 64, 32, 4, 3, True),
]


def _prune(configs, named_args, **kwargs):
    a = named_args["a_ptr"]
    fp32 = a.dtype == torch.float32
    keep = [c for c in configs if c.kwargs["FP32_CFG"] == fp32]
    if not a.is_cuda:  # no GPU to time configurations on (e.g. the CPU interpreter): take the first
        keep = keep[:1]
    return keep


@triton.autotune(configs=_CONFIGS, key=["M", "N", "K", "PRECISION", "UPCAST"], prune_configs_by={"early_config_prune": _prune})
@triton.jit
def _mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
               s_ab, s_am, s_ak, s_bb, s_bk, s_bn, s_cb, s_cm, s_cn,
               PRECISION: tl.constexpr, UPCAST: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
               GROUP_M: tl.constexpr, FP32_CFG: tl.constexpr):
    pid = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    # grouped ordering: consecutive programs share B column panels and A row panels in L2
    width = GROUP_M * grid_n
    group = pid // width
    first_m = group * GROUP_M
    size_m = tl.minimum(grid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % width) % size_m
    pid_n = (pid % width) // size_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    ram = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
    rbn = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
    a_ptrs = a_ptr + batch * s_ab + ram[:, None].to(tl.int64) * s_am + rk[None, :] * s_ak
    b_ptrs = b_ptr + batch * s_bb + rk[:, None] * s_bk + rbn[None, :].to(tl.int64) * s_bn
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=rk[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < k_left, other=0.0)
        if UPCAST:  # exact: products of half-precision values are exact in float32
            acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K * s_ak
        b_ptrs += BLOCK_K * s_bk
    c = acc.to(c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + batch * s_cb + rm[:, None].to(tl.int64) * s_cm + rn[None, :] * s_cn
    tl.store(c_ptrs, c, mask=(rm < M)[:, None] & (rn < N)[None, :])


@triton.jit
def _mv_kernel(a_ptr, x_ptr, y_ptr, M, K, s_ab, s_am, s_ak, s_xb, s_xk, s_yb, s_ym,
               BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    """y[b, m] = sum_k a[b, m, k] * x[b, k]: rows of A are read contiguously, fp32 accumulation."""
    batch = tl.program_id(1).to(tl.int64)
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    m_ok = rm < M
    a_base = a_ptr + batch * s_ab + rm[:, None].to(tl.int64) * s_am
    acc = tl.zeros([BLOCK_M, BLOCK_K], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        k_ok = rk < K
        a = tl.load(a_base + rk[None, :] * s_ak, mask=m_ok[:, None] & k_ok[None, :], other=0.0)
        x = tl.load(x_ptr + batch * s_xb + rk * s_xk, mask=k_ok, other=0.0)
        acc += a.to(tl.float32) * x.to(tl.float32)[None, :]
    y = tl.sum(acc, axis=1)
    tl.store(y_ptr + batch * s_yb + rm * s_ym, y.to(y_ptr.dtype.element_ty), mask=m_ok)


@triton.jit
def _vm_kernel(x_ptr, b_ptr, y_ptr, K, N, s_xb, s_xk, s_bb, s_bk, s_bn, s_yb, s_yn,
               BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr):
    """y[b, n] = sum_k x[b, k] * B[b, k, n]: rows of B are read contiguously, fp32 accumulation."""
    batch = tl.program_id(1).to(tl.int64)
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = rn < N
    acc = tl.zeros([BLOCK_K, BLOCK_N], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        k_ok = rk < K
        b = tl.load(b_ptr + batch * s_bb + rk[:, None].to(tl.int64) * s_bk + rn[None, :] * s_bn,
                    mask=k_ok[:, None] & n_ok[None, :], other=0.0)
        x = tl.load(x_ptr + batch * s_xb + rk * s_xk, mask=k_ok, other=0.0)
        acc += x.to(tl.float32)[:, None] * b.to(tl.float32)
    y = tl.sum(acc, axis=0)
    tl.store(y_ptr + batch * s_yb + rn * s_yn, y.to(y_ptr.dtype.element_ty), mask=n_ok)


def _as_3d(t, batch, rows, cols):
    """(B, rows, cols) view of t broadcast to batch + (rows, cols); copies only when no view exists."""
    e = t.expand(*batch, rows, cols)
    nb = 1
    for s in batch:
        nb *= s
    try:
        return e.view(nb, rows, cols)
    except RuntimeError:
        return e.reshape(nb, rows, cols)


def matmul(tensor1, tensor2):
    if tensor1.dim() == 0 or tensor2.dim() == 0:
        raise RuntimeError("matmul: both arguments need at least one dimension")
    a = tensor1.unsqueeze(0) if tensor1.dim() == 1 else tensor1
    b = tensor2.unsqueeze(-1) if tensor2.dim() == 1 else tensor2
    M, K = a.shape[-2], a.shape[-1]
    N = b.shape[-1]
    if b.shape[-2] != K:
        raise RuntimeError(f"matmul: shapes {tuple(tensor1.shape)} and {tuple(tensor2.shape)} do not match")
    batch = tuple(torch.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    out = torch.empty(*batch, M, N, dtype=tensor1.dtype, device=tensor1.device)
    if out.numel():
        if b.dim() == 2 and a.dim() > 2 and a.is_contiguous():
            # (..., M, K) @ (K, N): fold the batch into M, one large GEMM
            a3 = a.reshape(1, a.numel() // K, K)
            b3 = b.unsqueeze(0)
            c3 = out.view(1, out.numel() // N, N)
        else:
            a3 = _as_3d(a, batch, M, K)
            b3 = _as_3d(b, batch, K, N)
            c3 = out.view(out.numel() // (M * N), M, N)
        nb, m = c3.shape[0], c3.shape[1]
        if N == 1:
            block_k = min(triton.next_power_of_2(K), 256) if K else 16
            block_m = max(1, min(64, 4096 // block_k))
            _mv_kernel[(triton.cdiv(m, block_m), nb)](
                a3, b3, c3, m, K, a3.stride(0), a3.stride(1), a3.stride(2), b3.stride(0), b3.stride(1),
                c3.stride(0), c3.stride(1), BLOCK_M=block_m, BLOCK_K=block_k, num_warps=4)
        elif m == 1:
            block_n = min(triton.next_power_of_2(N), 256)
            block_k = max(1, min(64, 8192 // block_n))
            _vm_kernel[(triton.cdiv(N, block_n), nb)](
                a3, b3, c3, K, N, a3.stride(0), a3.stride(2), b3.stride(0), b3.stride(1), b3.stride(2),
                c3.stride(0), c3.stride(2), BLOCK_K=block_k, BLOCK_N=block_n, num_warps=4)
        else:
            precision = "ieee" if a3.dtype == torch.float32 else "tf32"
            # The Triton CPU interpreter multiplies bfloat16 tiles as raw integers; off the GPU, feed
            # tl.dot float32 copies of the tiles instead (same exact products, same float32 sums).
            upcast = a3.dtype == torch.bfloat16 and not a3.is_cuda

            def grid(meta):
                return (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]), nb)

            _mm_kernel[grid](a3, b3, c3, m, N, K, a3.stride(0), a3.stride(1), a3.stride(2),
                             b3.stride(0), b3.stride(1), b3.stride(2), c3.stride(0), c3.stride(1), c3.stride(2),
                             PRECISION=precision, UPCAST=upcast)
    if tensor1.dim() == 1:
        out = out.squeeze(-2)
    if tensor2.dim() == 1:
        out = out.squeeze(-1)
    return out
