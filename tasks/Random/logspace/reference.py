import torch

from kbx_worker.casegen import Case

F32, F64, F16, BF16 = torch.float32, torch.float64, torch.float16, torch.bfloat16


def logspace(start, end, steps, base=10.0, dtype=None, layout=torch.strided, device=None,
             requires_grad=False):
    # 0-d tensor bounds are read as numbers, which every supported torch version accepts.
    start = start.item() if isinstance(start, torch.Tensor) else start
    end = end.item() if isinstance(end, torch.Tensor) else end
    return torch.logspace(start, end, steps, base=base, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def shadow(start, end, steps, base=10.0, dtype=None, layout=torch.strided, device=None,
           requires_grad=False):
    return logspace(start, end, steps, base=base, dtype=F64, device=device)


def _num(c, low, high):
    """A random Python float in [low, high), rounded to 4 decimals (readable case files)."""
    return round(c.uniform((), low=low, high=high).item(), 4)


def _case(start, end, steps, dtype=None, tensors=False, **kwargs):
    """start/end: numbers or (low, high) ranges to draw from."""
    def make(c):
        s = _num(c, *start) if isinstance(start, tuple) else start
        e = _num(c, *end) if isinstance(end, tuple) else end
        if tensors:
            s = torch.tensor(s, device=c.device)
            e = torch.tensor(e, device=c.device)
        kw = dict(kwargs, device=str(c.device))
        if dtype is not None:
            kw["dtype"] = dtype
        return (s, e, steps), kw
    return make


def cases():
    return [
        Case("one_step", "edge", _case((-3.0, 3.0), (-3.0, 3.0), 1)),
        Case("zero_steps", "edge", _case(1.0, 3.0, 0)),
        Case("two_steps", "edge", _case((-3.0, 0.0), (0.0, 3.0), 2)),
        Case("constant", "edge", _case(2.5, 2.5, 9)),
        Case("powers_of_two", "edge", _case(0.0, 30.0, 31, base=2.0)),
        Case("kbx_basic", "edge", _case(1.0, 3.0, 5)),
        Case("tensor_bounds", "edge", _case((-2.0, 0.0), (1.0, 3.0), 17, tensors=True)),
        Case("decades_f32", "small", _case((-6.0, -1.0), (1.0, 6.0), 1000), dist="decades"),
        Case("decades_odd_f32", "small", _case((-4.0, 0.0), (0.0, 8.0), 4097), dist="decades"),
        Case("decades_f64", "small", _case((-5.0, 0.0), (0.0, 5.0), 1001, dtype=F64), dist="decades"),
        Case("descending_f32", "small", _case((2.0, 6.0), (-6.0, -2.0), 7919), dist="descending"),
        Case("base2_f32", "small", _case((-20.0, 0.0), (0.0, 20.0), 3001, base=2.0), dist="other_base"),
        Case("base_half_f32", "small", _case((-10.0, 0.0), (0.0, 10.0), 999, base=0.5), dist="other_base"),
        Case("base_e_f16", "small", _case((-8.0, 0.0), (0.0, 8.0), 2049, base=2.718281828459045, dtype=F16),
             dist="other_base"),
        Case("decades_bf16", "small", _case((-8.0, 0.0), (0.0, 8.0), 513, dtype=BF16), dist="decades"),
        Case("perf_f32_16M", "full", _case((-3.0, 0.0), (0.0, 3.0), 1 << 24), dist="decades"),
        Case("perf_f32_64M", "full", _case((-5.0, 0.0), (0.0, 5.0), 1 << 26), dist="decades"),
        Case("perf_bf16_64M_base2", "full", _case((-30.0, 0.0), (0.0, 30.0), 1 << 26, base=2.0, dtype=BF16),
             dist="other_base"),
        Case("perf_f16_odd", "full", _case((-4.0, 0.0), (0.0, 4.0), 50331653, dtype=F16), dist="decades"),
    ]


def cost(start, end, steps, base=10.0, dtype=None, layout=torch.strided, device=None, requires_grad=False):
    es = torch.empty((), dtype=dtype or torch.get_default_dtype()).element_size()
    return {"flops": 4 * steps, "bytes": steps * es}
