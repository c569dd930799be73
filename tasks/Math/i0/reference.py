import torch

from kbx_worker.casegen import Case


def i0(input_tensor, out=None):
    return torch.special.i0(input_tensor, out=out)


def _plain(make):
    return lambda c: ((make(c),), {})


def _into_out(make):
    def build(c):
        x = make(c)
        return (x,), {"out": c.randn(x.shape, dtype=x.dtype)}
    return build


def cases():
    return [
        Case("special_f32", "edge", _plain(lambda c: c.special(torch.float32, inf=False))),
        Case("branches_f32", "edge", _plain(lambda c: torch.tensor(
            [0.0, 1.0, -1.0, 7.99, 8.0, 8.01, -8.0, 20.0, 50.0, 88.0, 89.0, 100.0], device=c.device))),
        Case("empty_f32", "edge", _plain(lambda c: c.randn(0, 7))),
        Case("scalar_f32", "edge", _plain(lambda c: c.randn(()))),
        Case("out_f32", "edge", _into_out(lambda c: c.randn(257, 33, std=5.0)), dist="normal"),
        Case("normal_f32", "small", _plain(lambda c: c.randn(1000, 37, std=5.0)), dist="normal"),
        Case("uniform_f32", "small", _plain(lambda c: c.uniform(3, 5, 1021, low=-10, high=10)), dist="uniform"),
        Case("uniform_f32_large", "small", _plain(lambda c: c.uniform(4099, low=-85, high=85)), dist="uniform"),
        Case("outliers_f32", "small", _plain(lambda c: c.outliers(7919, scale=30.0)), dist="outliers"),
        Case("perf_f32_16M", "full", _plain(lambda c: c.randn(4096, 4096, std=5.0)), dist="normal"),
        Case("perf_f32_64M", "full", _plain(lambda c: c.randn(8192, 8192, std=5.0)), dist="normal"),
        Case("perf_f32_odd", "full", _plain(lambda c: c.uniform(12289, 3001, low=-20, high=20)), dist="uniform"),
    ]


def cost(input_tensor, out=None):
    n = input_tensor.numel()
    return {"flops": 70 * n, "bytes": 2 * n * input_tensor.element_size()}
