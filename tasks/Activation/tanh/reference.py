import torch

from kbx_worker.casegen import Case

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def tanh(input_tensor, out_tensor=None):
    return torch.tanh(input_tensor, out=out_tensor)


def _one(make_input, with_out=False):
    def make(c):
        x = make_input(c)
        if with_out:
            return (x,), {"out_tensor": torch.zeros_like(x)}
        return (x,), {}
    return make


def cases():
    return [
        Case("special_f32", "edge", _one(lambda c: c.special(F32))),
        Case("special_f16_out", "edge", _one(lambda c: c.special(F16), with_out=True)),
        Case("special_bf16", "edge", _one(lambda c: c.special(BF16))),
        Case("empty_f32", "edge", _one(lambda c: c.randn(0, 7))),
        Case("scalar_f32", "edge", _one(lambda c: c.randn(()))),
        Case("tiny_f32", "edge", _one(lambda c: c.randn(513, std=1e-5))),
        Case("normal_f32", "small", _one(lambda c: c.randn(1000, 37)), dist="normal"),
        Case("normal_f32_out", "small", _one(lambda c: c.randn(3, 5, 1021), with_out=True), dist="normal"),
        Case("uniform_f16", "small", _one(lambda c: c.uniform(4097, low=-6, high=6, dtype=F16)),
             dist="uniform"),
        Case("outliers_bf16", "small", _one(lambda c: c.outliers(333, 65, dtype=BF16)), dist="outliers"),
        Case("outliers_f32", "small", _one(lambda c: c.outliers(7919)), dist="outliers"),
        Case("perf_f32_16M", "full", _one(lambda c: c.randn(4096, 4096)), dist="normal"),
        Case("perf_f32_64M", "full", _one(lambda c: c.randn(8192, 8192)), dist="normal"),
        Case("perf_f32_64M_out", "full", _one(lambda c: c.randn(8192, 8192), with_out=True), dist="normal"),
        Case("perf_bf16_64M", "full", _one(lambda c: c.randn(8192, 8192, dtype=BF16)), dist="normal"),
        Case("perf_f16_odd", "full", _one(lambda c: c.randn(12289, 3001, dtype=F16)), dist="normal"),
    ]


def cost(input_tensor, out_tensor=None):
    n = input_tensor.numel()
    return {"flops": 6 * n, "bytes": 2 * n * input_tensor.element_size()}
