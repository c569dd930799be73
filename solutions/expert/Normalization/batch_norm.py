import torch
import triton
import triton.language as tl

_TARGET_PROGRAMS = 1024


@triton.jit
def _merge(n_a, mean_a, m2_a, n_b, mean_b, m2_b):
    """Chan et al.: combine two (count, mean, sum of squared deviations) summaries."""
    n = n_a + n_b
    w = tl.where(n > 0, n_b / tl.maximum(n, 1.0), 0.0)
    delta = mean_b - mean_a
    mean = mean_a + delta * w
    m2 = m2_a + m2_b + delta * delta * n_a * w
    return n, mean, m2


@triton.jit
def _stats_spatial_kernel(x_ptr, cnt_ptr, mean_ptr, m2_ptr, N, C, HW, n_per_split, n_splits,
                          BLOCK_N: tl.constexpr, BLOCK_HW: tl.constexpr):
    """Partial statistics of channel c over batch items [s*n_per_split, ...) of an (N, C, HW) input.
    Each (BLOCK_N, BLOCK_HW) tile is summarized exactly (mean, then squared deviations, in registers)
    and merged into the running summary with Chan's rule, so large channel means cost no accuracy."""
    pid = tl.program_id(0)
    c = pid // n_splits
    s = pid % n_splits
    n0 = s * n_per_split
    n1 = tl.minimum(n0 + n_per_split, N)
    cnt = 0.0
    mean = 0.0
    m2 = 0.0
    for nb0 in range(n0, n1, BLOCK_N):
        nn = nb0 + tl.arange(0, BLOCK_N)
        row = (nn.to(tl.int64) * C + c) * HW
        for hb0 in range(0, HW, BLOCK_HW):
            hw = hb0 + tl.arange(0, BLOCK_HW)
            ok = (nn < n1)[:, None] & (hw < HW)[None, :]
            x = tl.load(x_ptr + row[:, None] + hw[None, :], mask=ok, other=0.0).to(tl.float32)
            nb = tl.sum(tl.sum(ok.to(tl.float32), axis=1), axis=0)
            mb = tl.sum(tl.sum(x, axis=1), axis=0) / nb
            d = tl.where(ok, x - mb, 0.0)
            m2b = tl.sum(tl.sum(d * d, axis=1), axis=0)
            cnt, mean, m2 = _merge(cnt, mean, m2, nb, mb, m2b)
    tl.store(cnt_ptr + pid, cnt)
    tl.store(mean_ptr + pid, mean)
    tl.store(m2_ptr + pid, m2)


@triton.jit
def _stats_rows_kernel(x_ptr, cnt_ptr, mean_ptr, m2_ptr, N, C, rows_per_split, n_splits, n_cblocks,
                       BLOCK_N: tl.constexpr, BLOCK_C: tl.constexpr):
    """Partial statistics for (N, C) inputs: program (channel block, split) walks its rows in tiles."""
    pid = tl.program_id(0)
    cb = pid // n_splits
    s = pid % n_splits
    cols = cb * BLOCK_C + tl.arange(0, BLOCK_C)
    c_ok = cols < C
    r0 = s * rows_per_split
    r1 = tl.minimum(r0 + rows_per_split, N)
    cnt = tl.zeros([BLOCK_C], tl.float32)
    mean = tl.zeros([BLOCK_C], tl.float32)
    m2 = tl.zeros([BLOCK_C], tl.float32)
    for start in range(r0, r1, BLOCK_N):
        r = start + tl.arange(0, BLOCK_N)
        ok = (r < r1)[:, None] & c_ok[None, :]
        x = tl.load(x_ptr + r[:, None].to(tl.int64) * C + cols[None, :], mask=ok, other=0.0).to(tl.float32)
        nb = tl.sum(ok.to(tl.float32), axis=0)
        mb = tl.sum(x, axis=0) / tl.maximum(nb, 1.0)
        d = tl.where(ok, x - mb[None, :], 0.0)
        m2b = tl.sum(d * d, axis=0)
        cnt, mean, m2 = _merge(cnt, mean, m2, nb, mb, m2b)
    out = s * C + cols
    tl.store(cnt_ptr + out, cnt, mask=c_ok)
    tl.store(mean_ptr + out, mean, mask=c_ok)
    tl.store(m2_ptr + out, m2, mask=c_ok)


@triton.jit
def _finalize_kernel(cnt_ptr, pmean_ptr, pm2_ptr, rm_ptr, rv_ptr, w_ptr, b_ptr, mean_ptr, scale_ptr, shift_ptr,
                     C, n_splits, split_stride, chan_stride, momentum, eps,
                     TRAINING: tl.constexpr, HAS_RUNNING: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr,
                     BLOCK_C: tl.constexpr):
    """Per channel: merge the partial statistics (training) or read the running ones (eval), update the
    running statistics, and emit mean, scale = weight / sqrt(var + eps) and shift = bias."""
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    ok = cols < C
    if TRAINING:
        cnt = tl.zeros([BLOCK_C], tl.float32)
        mean = tl.zeros([BLOCK_C], tl.float32)
        m2 = tl.zeros([BLOCK_C], tl.float32)
        for s in range(0, n_splits):
            off = s * split_stride + cols * chan_stride
            nb = tl.load(cnt_ptr + off, mask=ok, other=0.0)
            mb = tl.load(pmean_ptr + off, mask=ok, other=0.0)
            m2b = tl.load(pm2_ptr + off, mask=ok, other=0.0)
            cnt, mean, m2 = _merge(cnt, mean, m2, nb, mb, m2b)
        var = m2 / cnt
        if HAS_RUNNING:
            rm = tl.load(rm_ptr + cols, mask=ok, other=0.0).to(tl.float32)
            rv = tl.load(rv_ptr + cols, mask=ok, other=0.0).to(tl.float32)
            unbiased = m2 / (cnt - 1.0)
            rm = (1.0 - momentum) * rm + momentum * mean
            rv = (1.0 - momentum) * rv + momentum * unbiased
            tl.store(rm_ptr + cols, rm.to(rm_ptr.dtype.element_ty), mask=ok)
            tl.store(rv_ptr + cols, rv.to(rv_ptr.dtype.element_ty), mask=ok)
    else:
        mean = tl.load(rm_ptr + cols, mask=ok, other=0.0).to(tl.float32)
        var = tl.load(rv_ptr + cols, mask=ok, other=1.0).to(tl.float32)
    scale = 1.0 / tl.sqrt_rn(var + eps)
    if HAS_W:
        scale = scale * tl.load(w_ptr + cols, mask=ok, other=1.0).to(tl.float32)
    if HAS_B:
        shift = tl.load(b_ptr + cols, mask=ok, other=0.0).to(tl.float32)
    else:
        shift = tl.zeros([BLOCK_C], tl.float32)
    tl.store(mean_ptr + cols, mean, mask=ok)
    tl.store(scale_ptr + cols, scale, mask=ok)
    tl.store(shift_ptr + cols, shift, mask=ok)


@triton.jit
def _apply_spatial_kernel(x_ptr, y_ptr, mean_ptr, scale_ptr, shift_ptr, C, HW, n_hw_blocks,
                          BLOCK: tl.constexpr):
    """y = (x - mean[c]) * scale[c] + shift[c]; program = (row n*C + c, block of HW)."""
    pid = tl.program_id(0)
    row = pid // n_hw_blocks
    hb = pid % n_hw_blocks
    c = row % C
    mean = tl.load(mean_ptr + c)
    scale = tl.load(scale_ptr + c)
    shift = tl.load(shift_ptr + c)
    hw = hb * BLOCK + tl.arange(0, BLOCK)
    ok = hw < HW
    off = row.to(tl.int64) * HW + hw
    x = tl.load(x_ptr + off, mask=ok, other=0.0).to(tl.float32)
    y = (x - mean) * scale + shift
    tl.store(y_ptr + off, y.to(y_ptr.dtype.element_ty), mask=ok)


@triton.jit
def _apply_rows_kernel(x_ptr, y_ptr, mean_ptr, scale_ptr, shift_ptr, R, C, HW, n_cblocks,
                       BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """Same map for inputs with small spatial size, viewed as R rows of C*HW values."""
    pid = tl.program_id(0)
    rb = pid // n_cblocks
    cb = pid % n_cblocks
    rows = rb * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = cb * BLOCK_C + tl.arange(0, BLOCK_C)
    width = C * HW
    c_ok = cols < width
    ch = cols // HW
    mean = tl.load(mean_ptr + ch, mask=c_ok, other=0.0)
    scale = tl.load(scale_ptr + ch, mask=c_ok, other=0.0)
    shift = tl.load(shift_ptr + ch, mask=c_ok, other=0.0)
    ok = (rows < R)[:, None] & c_ok[None, :]
    off = rows[:, None].to(tl.int64) * width + cols[None, :]
    x = tl.load(x_ptr + off, mask=ok, other=0.0).to(tl.float32)
    y = (x - mean[None, :]) * scale[None, :] + shift[None, :]
    tl.store(y_ptr + off, y.to(y_ptr.dtype.element_ty), mask=ok)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-05):
    x = input.contiguous()
    N, C = x.shape[0], x.shape[1]
    HW = 1
    for s in x.shape[2:]:
        HW *= s
    dev = x.device
    y = torch.empty_like(x)
    mean = torch.empty(C, dtype=torch.float32, device=dev)
    scale = torch.empty(C, dtype=torch.float32, device=dev)
    shift = torch.empty(C, dtype=torch.float32, device=dev)
    has_running = running_mean is not None and running_var is not None
    if training and N * HW <= 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {tuple(x.shape)}")
    if not training and not has_running:
        raise ValueError("running_mean and running_var are needed when training=False")
    for t in (running_mean, running_var):
        if t is not None and not t.is_contiguous():
            raise ValueError("running statistics must be contiguous")
    dummy = mean
    if training:
        if HW > 1:
            splits = max(1, min(N, triton.cdiv(_TARGET_PROGRAMS, C)))
            n_per_split = triton.cdiv(N, splits)
            splits = triton.cdiv(N, n_per_split)
            block_hw = min(triton.next_power_of_2(HW), 1024)
            block_n = max(1, min(triton.next_power_of_2(n_per_split), 2048 // block_hw))
            cnt = torch.empty(C * splits, dtype=torch.float32, device=dev)
            pmean = torch.empty_like(cnt)
            pm2 = torch.empty_like(cnt)
            _stats_spatial_kernel[(C * splits,)](x, cnt, pmean, pm2, N, C, HW, n_per_split, splits,
                                                 BLOCK_N=block_n, BLOCK_HW=block_hw,
                                                 num_warps=4 if block_n * block_hw <= 1024 else 8)
            split_stride, chan_stride = 1, splits  # partials stored as [C, splits]
        else:
            block_c = min(triton.next_power_of_2(C), 64)
            n_cb = triton.cdiv(C, block_c)
            block_n = max(1, min(triton.next_power_of_2(N), 4096 // block_c))
            splits = max(1, min(triton.cdiv(_TARGET_PROGRAMS, n_cb), triton.cdiv(N, 4 * block_n)))
            rows_per_split = triton.cdiv(triton.cdiv(N, splits), block_n) * block_n
            splits = triton.cdiv(N, rows_per_split)
            cnt = torch.empty(splits * C, dtype=torch.float32, device=dev)
            pmean = torch.empty_like(cnt)
            pm2 = torch.empty_like(cnt)
            _stats_rows_kernel[(n_cb * splits,)](x, cnt, pmean, pm2, N, C, rows_per_split, splits, n_cb,
                                                 BLOCK_N=block_n, BLOCK_C=block_c, num_warps=4)
            split_stride, chan_stride = C, 1  # partials stored as [splits, C]
    else:
        cnt = pmean = pm2 = dummy
        splits, split_stride, chan_stride = 0, 0, 0
    block_c = min(triton.next_power_of_2(C), 256)
    _finalize_kernel[(triton.cdiv(C, block_c),)](
        cnt, pmean, pm2, running_mean if has_running else dummy, running_var if has_running else dummy,
        weight if weight is not None else dummy, bias if bias is not None else dummy, mean, scale, shift,
        C, splits, split_stride, chan_stride, float(momentum), float(eps),
        TRAINING=bool(training), HAS_RUNNING=has_running, HAS_W=weight is not None, HAS_B=bias is not None,
        BLOCK_C=block_c)
    if x.numel():
        if HW >= 1024:
            block = min(triton.next_power_of_2(HW), 2048)
            n_hb = triton.cdiv(HW, block)
            _apply_spatial_kernel[(N * C * n_hb,)](x, y, mean, scale, shift, C, HW, n_hb, BLOCK=block,
                                                  num_warps=4 if block <= 1024 else 8)
        else:
            width = C * HW
            block_c = min(triton.next_power_of_2(width), 1024)
            block_r = max(1, 4096 // block_c)
            n_cb = triton.cdiv(width, block_c)
            _apply_rows_kernel[(triton.cdiv(N, block_r) * n_cb,)](x, y, mean, scale, shift, N, C, HW, n_cb,
                                                                 BLOCK_R=block_r, BLOCK_C=block_c, num_warps=8)
    return y
