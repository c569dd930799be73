import torch
import torch.nn.functional as F

from kbx_worker.casegen import Case


def grid_sample(input, grid, mode='bilinear', padding_mode='zeros', align_corners=False):
    if not isinstance(input, torch.Tensor):
        raise TypeError('Input should be a torch.Tensor.')
    if not isinstance(grid, torch.Tensor):
        raise TypeError('Grid should be a torch.Tensor.')
    if mode not in ['bilinear', 'nearest']:
        raise ValueError("Mode should be either 'bilinear' or 'nearest'.")
    if padding_mode not in ['zeros', 'border', 'reflection']:
        raise ValueError("Padding mode should be one of 'zeros', 'border', or 'reflection'.")
    if input.device.type == "cpu" and input.dtype in (torch.float16, torch.bfloat16):
        # PyTorch before 2.6 has no half-precision grid_sample on the CPU: compute in float32, round once.
        out = F.grid_sample(input.float(), grid.float(), mode=mode, padding_mode=padding_mode,
                            align_corners=align_corners)
        return out.to(input.dtype)
    return F.grid_sample(input, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)


def _normalize(u, size, align_corners):
    """Pixel coordinate u -> normalized grid coordinate (float64)."""
    if align_corners:
        return 2.0 * u / max(size - 1, 1) - 1.0
    return (2.0 * u + 1.0) / size - 1.0


def _safe_nearest_grid(c, n, out_hw, sizes, align_corners, spill=1):
    """Grid whose pixel coordinates are an integer in [-spill, size-1+spill] plus an offset in
    [-0.4, 0.4]: at least 0.1 away from every rounding boundary, so 'nearest' is well-conditioned."""
    coords = []
    for size in sizes:  # (W, H[, D]) order, as in the grid's last dimension
        k = c.randint(-spill, size + spill, n, *out_hw).to(torch.float64)
        off = c.uniform(n, *out_hw, low=-0.4, high=0.4).to(torch.float64)
        coords.append(_normalize(k + off, size, align_corners))
    return torch.stack(coords, dim=-1).to(torch.float32)


def _flow_grid(c, n, h, w, dtype, amp=0.05):
    """Identity sampling grid plus a small random displacement (optical-flow style warp)."""
    ys = torch.linspace(-1, 1, h, device=c.device)
    xs = torch.linspace(-1, 1, w, device=c.device)
    base = torch.stack(torch.meshgrid(xs, ys, indexing="xy"), dim=-1).expand(n, h, w, 2)
    return (base + c.uniform(n, h, w, 2, low=-amp, high=amp)).to(dtype)


def _sample(x_shape, g_shape, draw="randn", g_low=-1.0, g_high=1.0, dtype=torch.float32, **kwargs):
    def make(c):
        if draw == "uniform":
            x = c.uniform(*x_shape, low=-1, high=1)
        elif draw == "outliers":
            x = c.outliers(*x_shape)
        else:
            x = c.randn(*x_shape)
        g = c.uniform(*g_shape, low=g_low, high=g_high)
        return (x.to(dtype), g.to(dtype)), kwargs
    return make


def _nearest(x_shape, out_hw, dtype=torch.float32, **kwargs):
    def make(c):
        align = kwargs.get("align_corners", False)
        sizes = tuple(reversed(x_shape[2:]))
        g = _safe_nearest_grid(c, x_shape[0], out_hw, sizes, align)
        return (c.randn(*x_shape).to(dtype), g.to(dtype)), dict(kwargs, mode="nearest")
    return make


def _fixed_points(c):
    """Exact corners, centers and points beyond the border, for every padding mode."""
    pts = [[-1.0, -1.0], [1.0, 1.0], [0.0, 0.0], [-1.0, 1.0], [1.25, -0.5], [-1.5, 0.75], [3.0, -2.5],
           [0.2, 1.0]]
    g = torch.tensor(pts, device=c.device).reshape(1, 2, 4, 2).expand(2, 2, 4, 2).contiguous()
    return c.randn(2, 3, 4, 5), g


def _flow(n, ch, h, w, dtype=torch.float32, **kwargs):
    return lambda c: ((c.randn(n, ch, h, w).to(dtype), _flow_grid(c, n, h, w, dtype)), kwargs)


def cases():
    f16, bf16 = torch.float16, torch.bfloat16
    fixed = lambda **kw: (lambda c: (_fixed_points(c), kw))
    return [
        Case("fixed_points_zeros", "edge", fixed()),
        Case("fixed_points_border_align", "edge", fixed(padding_mode="border", align_corners=True)),
        Case("fixed_points_reflection", "edge", fixed(padding_mode="reflection")),
        Case("fixed_points_reflection_align", "edge", fixed(padding_mode="reflection", align_corners=True)),
        Case("bilinear_4d_small", "edge", _sample((1, 3, 4, 4), (1, 2, 2, 2))),
        Case("nearest_border", "edge", _nearest((1, 3, 4, 4), (2, 2), padding_mode="border")),
        Case("bilinear_5d_reflection", "edge", _sample((1, 3, 4, 4, 4), (1, 2, 2, 2, 3),
                                                       padding_mode="reflection")),
        Case("nearest_5d_zeros_align", "edge", _nearest((1, 3, 4, 4, 4), (3, 3, 3), align_corners=True)),
        Case("one_pixel_image", "edge", _sample((2, 3, 1, 1), (2, 3, 3, 2), g_low=-2, g_high=2)),
        Case("normal_f32", "small", _sample((2, 3, 32, 32), (2, 16, 16, 2)), dist="normal"),
        Case("normal_f32_out_of_range_zeros", "small",
             _sample((2, 5, 17, 23), (2, 19, 13, 2), g_low=-1.5, g_high=1.5), dist="normal"),
        Case("uniform_f32_border_align", "small",
             _sample((2, 4, 21, 19), (2, 15, 17, 2), draw="uniform", g_low=-1.3, g_high=1.3,
                     padding_mode="border", align_corners=True), dist="uniform"),
        Case("outliers_f32_reflection", "small",
             _sample((1, 6, 25, 31), (1, 20, 22, 2), draw="outliers", g_low=-3, g_high=3,
                     padding_mode="reflection"), dist="outliers"),
        Case("normal_f32_nearest_reflection", "small",
             _nearest((2, 4, 19, 27), (14, 15), padding_mode="reflection"), dist="normal"),
        Case("normal_f32_nearest_zeros_align", "small", _nearest((2, 4, 16, 20), (13, 11), align_corners=True),
             dist="normal"),
        Case("normal_f32_5d_trilinear", "small",
             _sample((2, 3, 9, 10, 11), (2, 5, 6, 7, 3), g_low=-1.2, g_high=1.2), dist="normal"),
        Case("flow_f16", "small", _flow(2, 8, 24, 40, dtype=f16), dist="normal"),
        Case("uniform_bf16_reflection_align", "small",
             _sample((2, 4, 18, 22), (2, 16, 16, 2), draw="uniform", g_low=-1.5, g_high=1.5,
                     dtype=bf16, padding_mode="reflection", align_corners=True), dist="uniform"),
        Case("perf_f32_flow_warp_32x64x128x128", "full", _flow(32, 64, 128, 128), dist="normal"),
        Case("perf_f32_random_border_align", "full",
             _sample((16, 256, 64, 64), (16, 96, 96, 2), g_low=-1.1, g_high=1.1, padding_mode="border",
                     align_corners=True), dist="uniform"),
        Case("perf_f16_flow_reflection_8x32x256x256", "full",
             _flow(8, 32, 256, 256, dtype=f16, padding_mode="reflection"), dist="normal"),
        Case("perf_f32_nearest_32x64x112x112", "full", _nearest((32, 64, 112, 112), (112, 112)),
             dist="normal"),
        Case("perf_f32_5d_trilinear", "full", _sample((4, 16, 32, 64, 64), (4, 32, 64, 64, 3)),
             dist="normal"),
    ]


def cost(input, grid, mode='bilinear', padding_mode='zeros', align_corners=False):
    n, ch = input.shape[:2]
    points = grid.numel() // grid.shape[-1]
    out = points * ch
    taps = 1 if mode == "nearest" else 2 ** grid.shape[-1]
    es = input.element_size()
    return {"flops": 2 * taps * out, "bytes": (input.numel() + grid.numel() + out) * es}
