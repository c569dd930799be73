import torch

from kbx_worker.casegen import Case


def matmul(tensor1, tensor2):
    return torch.matmul(tensor1, tensor2)


def _pair(make_a, make_b):
    return lambda c: ((make_a(c), make_b(c)), {})


def _ints(*shape):
    """Small integers: products and sums are exact in every dtype and precision."""
    return lambda c: c.randint(-4, 5, *shape).to(torch.float32)


def cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        Case("ints_2x2_f32", "edge", _pair(_ints(2, 2), _ints(2, 2))),
        # Positive operands: a 0-d result is judged against a floor of 4 ulps of its own value,
        # and a dot of randn vectors that cancels to about 1 (3% of seeds) failed an honest
        # float32 kernel's normal accumulation error (49 ulps of 1 over 1000 terms).
        Case("dot_1d_f32", "edge", _pair(lambda c: c.uniform(1000, low=0.5, high=1.5),
                                         lambda c: c.uniform(1000, low=0.5, high=1.5))),
        Case("vecmat_1d_2d_f32", "edge", _pair(lambda c: c.randn(45), lambda c: c.randn(45, 67))),
        Case("vec_3d_f32", "edge", _pair(lambda c: c.randn(40), lambda c: c.randn(2, 40, 9))),
        Case("empty_k_f32", "edge", _pair(lambda c: c.randn(5, 0), lambda c: c.randn(0, 7))),
        Case("empty_m_f32", "edge", _pair(lambda c: c.randn(0, 6), lambda c: c.randn(6, 7))),
        Case("normal_f32", "small", _pair(lambda c: c.randn(64, 128), lambda c: c.randn(128, 32)),
             dist="normal"),
        Case("normal_f32_odd", "small", _pair(lambda c: c.randn(97, 111), lambda c: c.randn(111, 83)),
             dist="normal"),
        Case("normal_f32_bmm", "small", _pair(lambda c: c.randn(3, 33, 65), lambda c: c.randn(3, 65, 47)),
             dist="normal"),
        Case("normal_f32_bcast_batch", "small",
             _pair(lambda c: c.randn(2, 1, 31, 40), lambda c: c.randn(3, 40, 17)), dist="normal"),
        Case("normal_f32_batch_x_2d", "small", _pair(lambda c: c.randn(4, 37, 50), lambda c: c.randn(50, 29)),
             dist="normal"),
        Case("normal_f32_matvec", "small", _pair(lambda c: c.randn(127, 300), lambda c: c.randn(300)),
             dist="normal"),
        Case("uniform_f16", "small",
             _pair(lambda c: c.uniform(100, 128, low=-1, high=1, dtype=f16),
                   lambda c: c.uniform(128, 120, low=-1, high=1, dtype=f16)), dist="uniform"),
        Case("uniform_f16_bmm", "small",
             _pair(lambda c: c.uniform(2, 45, 64, low=-1, high=1, dtype=f16),
                   lambda c: c.uniform(2, 64, 71, low=-1, high=1, dtype=f16)), dist="uniform"),
        Case("outliers_bf16", "small", _pair(lambda c: c.outliers(65, 77, dtype=bf16),
                                             lambda c: c.outliers(77, 99, dtype=bf16)), dist="outliers"),
        Case("outliers_f32", "small", _pair(lambda c: c.outliers(50, 128), lambda c: c.outliers(128, 70)),
             dist="outliers"),
        Case("normal_bf16_vecmat", "small", _pair(lambda c: c.randn(300, dtype=bf16),
                                                  lambda c: c.randn(300, 127, dtype=bf16)), dist="normal"),
        Case("perf_f16_4096", "full", _pair(lambda c: c.randn(4096, 4096, dtype=f16),
                                            lambda c: c.randn(4096, 4096, dtype=f16)), dist="normal"),
        Case("perf_bf16_8192", "full", _pair(lambda c: c.randn(8192, 8192, dtype=bf16),
                                             lambda c: c.randn(8192, 8192, dtype=bf16)), dist="normal"),
        Case("perf_f16_batch_x_2d", "full", _pair(lambda c: c.randn(2, 4096, 8192, dtype=f16),
                                                  lambda c: c.randn(8192, 4096, dtype=f16)), dist="normal"),
        Case("perf_bf16_bmm", "full", _pair(lambda c: c.randn(8, 4096, 4096, dtype=bf16),
                                            lambda c: c.randn(8, 4096, 4096, dtype=bf16)), dist="normal"),
        Case("perf_f32_4096", "full", _pair(lambda c: c.randn(4096, 4096), lambda c: c.randn(4096, 4096)),
             dist="normal"),
        Case("perf_bf16_matvec", "full", _pair(lambda c: c.randn(8192, 8192, dtype=bf16),
                                               lambda c: c.randn(8192, dtype=bf16)), dist="normal"),
    ]


def cost(tensor1, tensor2):
    out = torch.matmul(torch.empty(tensor1.shape, device="meta", dtype=tensor1.dtype),
                       torch.empty(tensor2.shape, device="meta", dtype=tensor2.dtype))
    k = tensor1.shape[-1]
    return {"flops": 2 * out.numel() * k,
            "bytes": (tensor1.numel() + tensor2.numel() + out.numel()) * tensor1.element_size()}
