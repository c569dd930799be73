import torch
import triton
import triton.language as tl

_TILE = 4096  # elements per program
_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


@triton.jit
def _permute_kernel(x_ptr, y_ptr, P, Q, isp, isq, osp,
                    B1, B2, B3, ib0, ib1, ib2, ib3, ob0, ob1, ob2, ob3, n_pb, n_qb,
                    NB: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_Q: tl.constexpr):
    """One (BLOCK_P, BLOCK_Q) tile of output dimensions p and q (q the output's innermost, p the
    input's innermost where that differs, so that both the loads and the stores are coalesced; the
    compiler moves the tile between the two layouts through shared memory). The other output
    dimensions (NB <= 4 of them, outermost first) come from the program id."""
    pid = tl.program_id(0)
    qb = pid % n_qb
    rest = pid // n_qb
    pb = rest % n_pb
    b = (rest // n_pb).to(tl.int64)
    in_base = b * 0
    out_base = b * 0
    if NB >= 4:
        in_base += (b % B3) * ib3
        out_base += (b % B3) * ob3
        b = b // B3
    if NB >= 3:
        in_base += (b % B2) * ib2
        out_base += (b % B2) * ob2
        b = b // B2
    if NB >= 2:
        in_base += (b % B1) * ib1
        out_base += (b % B1) * ob1
        b = b // B1
    in_base += b * ib0
    out_base += b * ob0
    p = pb.to(tl.int64) * BLOCK_P + tl.arange(0, BLOCK_P)
    q = qb.to(tl.int64) * BLOCK_Q + tl.arange(0, BLOCK_Q)
    mask = (p < P)[:, None] & (q < Q)[None, :]
    v = tl.load(x_ptr + in_base + p[:, None] * isp + q[None, :] * isq, mask=mask)
    tl.store(y_ptr + out_base + p[:, None] * osp + q[None, :], v, mask=mask)


def permute_copy(input: torch.Tensor, dims: list) -> torch.Tensor:
    x = input.contiguous()
    nd = x.dim()
    perm = [d % nd for d in dims] if nd else []
    if sorted(perm) != list(range(nd)):
        raise RuntimeError("permute_copy: dims is not a permutation")
    out_shape = [x.shape[d] for d in perm]
    y = torch.empty(out_shape, dtype=x.dtype, device=x.device)
    n = y.numel()
    if n == 0:
        return y
    # output dimensions as (size, input stride, output stride); drop size 1, merge where both are contiguous
    full = [(x.shape[d], x.stride(d), y.stride(i)) for i, d in enumerate(perm) if x.shape[d] != 1]
    cd = []
    for s, si, so in full:
        if cd and cd[-1][1] == si * s and cd[-1][2] == so * s:
            cd[-1] = (cd[-1][0] * s, si, so)
        else:
            cd.append((s, si, so))
    if not cd:
        cd = [(1, 1, 1)]
    iq = len(cd) - 1
    ip = next((i for i, d in enumerate(cd) if d[1] == 1 and i != iq), iq - 1)
    if ip < 0:
        pdim = (1, 0, 0)
    else:
        pdim = cd[ip]
    qdim = cd[iq]
    batch = [d for i, d in enumerate(cd) if i not in (ip, iq)]
    if len(batch) > 4:
        raise NotImplementedError("permute_copy: more than 6 dimensions after merging")
    nb = max(len(batch), 1)
    batch = batch + [(1, 0, 0)] * (4 - len(batch))
    P, isp, osp = pdim
    Q, isq, _ = qdim
    if isq == 1:   # plain row copies: wide along q
        block_q = min(triton.next_power_of_2(Q), 1024)
        block_p = max(1, min(_TILE // block_q, triton.next_power_of_2(P)))
    else:          # a transpose: square-ish tiles
        block_q = min(triton.next_power_of_2(Q), 64)
        block_p = max(1, min(_TILE // block_q, triton.next_power_of_2(P)))
        block_q = max(1, min(_TILE // block_p, triton.next_power_of_2(Q)))
    n_pb = triton.cdiv(P, block_p)
    n_qb = triton.cdiv(Q, block_q)
    n_batch = n // (P * Q)
    bits = _BITS[x.element_size()]
    grid = (n_batch * n_pb * n_qb,)
    _permute_kernel[grid](x.view(bits), y.view(bits), P, Q, isp, isq, osp,
                          batch[1][0], batch[2][0], batch[3][0],
                          *[d[1] for d in batch], *[d[2] for d in batch], n_pb, n_qb,
                          NB=nb, BLOCK_P=block_p, BLOCK_Q=block_q, num_warps=8)
    return y
