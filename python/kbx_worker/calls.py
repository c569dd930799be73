"""Shared pieces of reference and candidate mode: upcasting, output leaves, sync, errors."""

import torch

from .argcodec import encode_call, flatten_result, scalar_to_tensor
from .casegen import Ctx
from .tensorio import dtype_name, write_kbt

_UPCAST = {torch.float16: torch.float64, torch.bfloat16: torch.float64,
           torch.float32: torch.float64, torch.complex64: torch.complex128}


def upcast(value, device=None):
    """Deep copy of call arguments with floating tensors and dtypes raised to float64 (its tensors
    on `device`, else where they are)."""
    if isinstance(value, torch.Tensor):
        return value.detach().to(device=device or value.device,
                                 dtype=_UPCAST.get(value.dtype, value.dtype)).clone()
    if isinstance(value, torch.dtype):
        return _UPCAST.get(value, value)
    if isinstance(value, tuple):
        return tuple(upcast(v, device) for v in value)
    if isinstance(value, list):
        return [upcast(v, device) for v in value]
    if isinstance(value, dict):
        return {k: upcast(v, device) for k, v in value.items()}
    return value


def same_bits(a, b):
    """Bitwise equality (NaN payloads included), for telling which inputs a call updated."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.numel() == 0:
        return True
    # reshape(-1) keeps a 1-D view's stride (a column of a matrix, an expanded scalar), which a
    # view as bytes refuses: such a tensor is compared through a contiguous copy
    return torch.equal(_as_bytes(a), _as_bytes(b))


def _as_bytes(t):
    flat = t.reshape(-1)
    return (flat if flat.stride(0) == 1 else flat.contiguous()).view(torch.uint8)


def set_tf32(allowed):
    """Sets PyTorch's TF32 switches (matmul and cuDNN, which allows TF32 by default) to a task's
    rule; returns the previous (matmul, cudnn) pair."""
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = bool(allowed)
    torch.backends.cudnn.allow_tf32 = bool(allowed)
    return saved


def build_inputs(make, seed, device, tf32):
    """A case's input tensors by name, made again by its generator from the case's seed: under
    the task's TF32 rule and torch's default dtype (float32), whatever the process had set (a
    candidate may change either), both put back after. The reference's worker checks with it
    that a case's inputs come back bit for bit before it keeps no file for them; a candidate's
    worker builds them with it."""
    saved = set_tf32(tf32)
    saved_dtype = torch.get_default_dtype()
    torch.set_default_dtype(torch.float32)
    try:
        args, kwargs = make(Ctx(seed, device))
        _, tensors = encode_call(list(args), kwargs)
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
        torch.set_default_dtype(saved_dtype)
    return tensors


def load_values(tensors, values):
    """Writes values (by name) into a call's tensors, in place."""
    for k, t in tensors.items():
        t.copy_(values[k])


def values_fit(tensors, values):
    """Whether values can be written into the call's tensors as they are: the same names, shapes
    and dtypes (copy_ would broadcast a smaller shape without a word)."""
    return all(k in values and values[k].shape == t.shape and values[k].dtype == t.dtype
               for k, t in tensors.items())


def copies(tensors):
    """A call's tensors as they are now (kbx's own copies, on their device)."""
    return {k: v.detach().clone() for k, v in tensors.items()}


def value_variants(tensors, original, fresh, decoys):
    """The values a full case's timed calls cycle through, the candidate's and the baselines'
    alike: its own (`original`, written into the call's tensors now), its fresh twin's, and
    those of decoys() that fit. None when the call's tensors cannot take them: other shapes (an
    out= tensor sized by the values, as masked_select's is) or views that cannot be written in
    place (expanded ones)."""
    if not (values_fit(tensors, original) and values_fit(tensors, fresh)):
        return None
    try:
        load_values(tensors, original)
        return [original, fresh] + [d for d in decoys() if values_fit(tensors, d)]
    except (RuntimeError, KeyError):
        return None


# Value variants of a timed case besides its own and its fresh twin's: decoys from the task's
# generator (a candidate's cache keyed on input values needs an entry for each).
DECOYS = 2


def decoy_seed(twin_seed, k):
    """The seed of a timed case's k-th decoy values, derived from its fresh twin's seed: the
    candidate's worker and the reference's (for the baselines' timing) draw the same ones."""
    return (twin_seed * 0x9E3779B1 + k + 1) % (1 << 63)


def decoy_values(build, twin_seed, count):
    """Up to count decoy value sets, build(seed) at each decoy_seed; fewer when the generator
    fails on one of them."""
    out = []
    for k in range(count):
        try:
            out.append(build(decoy_seed(twin_seed, k)))
        except Exception:  # noqa: BLE001 - the generator failed on another seed: fewer decoys
            break
    return out


def sync(device):
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def _storage_span(t):
    if t.numel() == 0:
        return None
    start = t.data_ptr()
    return start, start + t.untyped_storage().nbytes()


def _alias_of(t, inputs):
    span = _storage_span(t) if isinstance(t, torch.Tensor) else None
    if span is None:
        return None
    for name, x in inputs.items():
        other = _storage_span(x)
        if other and t.device == x.device and span[0] < other[1] and other[0] < span[1]:
            return name
    return None


def _same_view(t, x):
    return (t.device == x.device and t.dtype == x.dtype and t.shape == x.shape
            and t.stride() == x.stride() and t.data_ptr() == x.data_ptr())


def _updated_input_of(t, inputs, updated):
    """Name of the updated input that t is exactly (same memory, shape and strides), if any."""
    for name in updated:
        x = inputs.get(name)
        if isinstance(x, torch.Tensor) and _same_view(t, x):
            return name
    return None


_HALF = (torch.float16, torch.bfloat16)


def narrow_shadow(named, ref_dtypes):
    """The float64 shadow tensors of `named` whose reference is float16 or bfloat16, stored as
    float32 (the rest unchanged): a float32 copy is within 2^-24 of the float64 value, 2^-13 of a
    float16 ulp and 2^-16 of a bfloat16 one, far under any allowance the verdict gives (ulp_floor
    ulps of the reference's dtype), and half the bytes. A tensor whose finite values do not all
    stay finite in float32 (bfloat16 reaches 3.39e38, float32's largest) keeps float64.
    ref_dtypes: name -> the reference tensor's torch dtype."""
    out = {}
    for name, t in named.items():
        if t.dtype == torch.float64 and ref_dtypes.get(name) in _HALF:
            narrow = t.to(torch.float32)
            if torch.equal(torch.isfinite(narrow), torch.isfinite(t)):
                t = narrow
        out[name] = t
    return out


def shadow_minus_ref(named, refs):
    """The float64 shadow tensors of `named` whose reference is a float32 tensor of the same
    shape, stored as their difference from it in float32 (shadow - ref: PyTorch's own error,
    kept to 2^-24 of itself, far under any allowance, which is never less than that error); the
    verdict adds the reference back. Half the bytes of a float64 shadow. A tensor with a
    non-finite value in the reference, the shadow or the difference, or a difference below
    float32's normal range, stays as it is.
    refs: name -> the reference's tensor. Returns (tensors, the names stored as differences)."""
    out, minus_ref = {}, []
    for name, s in named.items():
        r = refs.get(name)
        if (s.dtype == torch.float64 and isinstance(r, torch.Tensor)
                and r.dtype == torch.float32 and r.shape == s.shape and r.device == s.device):
            exact = s - r.to(torch.float64)
            diff = exact.to(torch.float32)
            # float32's subnormals would keep only a few bits of a difference (results near
            # 1e-38, as a reciprocal's of huge values): such a shadow stays float64
            subnormal = (exact != 0) & (exact.abs() < torch.finfo(torch.float32).tiny)
            if (bool(torch.isfinite(diff).all()) and bool(torch.isfinite(s).all())
                    and not bool(subnormal.any())):
                s = diff  # a finite difference of finite values: the reference is finite too
                minus_ref.append(name)
        out[name] = s
    return out, minus_ref


def save_result(result, path, inputs, expected_device, write=True, updated=()):
    """Write the result's leaves to path (unless write is False; a callable write(path, tensors)
    writes them instead of write_kbt); return (structure, metadata).

    A leaf that is exactly one of the `updated` inputs (an `out=` argument, an optimizer's
    state) is not written twice: its metadata says `same_as` that input, whose values travel in
    the inputs-after file."""
    structure, leaves = flatten_result(result)
    tensors = {}
    meta = []
    for name, value in leaves:
        info = {"name": name}
        if isinstance(value, torch.Tensor):
            info.update(kind="tensor", cls=type(value).__name__, dtype=dtype_name(value.dtype),
                        shape=list(value.shape), device=value.device.type,
                        alias=_alias_of(value, inputs))
            if type(value) is not torch.Tensor:
                info["kind"] = "tensor_subclass"
            same_as = _updated_input_of(value, inputs, updated) if info["kind"] == "tensor" else None
            if same_as is not None:
                info["same_as"] = same_as
            elif value.device.type != "meta":  # a meta tensor has no values: the supervisor
                tensors[name] = value           # judges it by its device (output_violation)
        elif value is None:
            info.update(kind="none")
        else:
            t = scalar_to_tensor(value)
            if t is None:
                info.update(kind="other", type=type(value).__name__)
            else:
                info.update(kind="scalar", dtype=dtype_name(t.dtype), shape=[])
                tensors[name] = t
        meta.append(info)
    if callable(write):
        write(path, tensors)
    elif write:
        write_kbt(path, tensors)
    return structure, meta


# A GPU library's failed allocation, in its own words (session 35 on an H100 with 80 GB in use:
# an honest reference's cuBLAS handle, "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling
# cublasCreate(handle)", read as the candidate's cuda_error rather than its out-of-memory).
LIBRARY_ALLOC_FAILED = ("CUBLAS_STATUS_ALLOC_FAILED", "CUDNN_STATUS_ALLOC_FAILED",
                        "CUSOLVER_STATUS_ALLOC_FAILED", "CUSPARSE_STATUS_ALLOC_FAILED",
                        "CUFFT_ALLOC_FAILED")


def classify_exception(exc):
    """Failure kind of an exception raised by a call: compile_error, oom, cuda_error, runtime_error."""
    name = type(exc).__name__
    text = str(exc)
    if name in ("CompilationError", "CompileTimeAssertionFailure") or "CompilationError" in text:
        return "compile_error"
    if isinstance(exc, (MemoryError, torch.cuda.OutOfMemoryError)) or name == "OutOfMemoryError" \
            or "out of memory" in text or any(word in text for word in LIBRARY_ALLOC_FAILED):
        return "oom"
    if "CUDA error" in text or "illegal memory access" in text or "device-side assert" in text \
            or "Triton Error [CUDA]" in text or name == "AcceleratorError":
        return "cuda_error"
    return "runtime_error"
