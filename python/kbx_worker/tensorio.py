"""Reading and writing .kbt tensor files, the format the C++ verdict reads.

Layout (little-endian):
  8 bytes magic b"KBXT\\x01\\x00\\x00\\x00", u32 count, then per tensor:
  u16 name length, name (utf-8), u16 dtype length, dtype name (e.g. "float32"),
  u8 ndim, i64 shape[ndim], u64 nbytes, raw C-contiguous data.
"""

import struct

import numpy as np
import torch

MAGIC = b"KBXT\x01\x00\x00\x00"

DTYPE_NAMES = {
    torch.float64: "float64",
    torch.float32: "float32",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.int64: "int64",
    torch.int32: "int32",
    torch.int16: "int16",
    torch.int8: "int8",
    torch.uint8: "uint8",
    torch.bool: "bool",
    torch.complex64: "complex64",
    torch.complex128: "complex128",
}
NAME_TO_DTYPE = {v: k for k, v in DTYPE_NAMES.items()}
# numpy views used to move raw bytes; bfloat16 has no numpy type so it travels as int16.
_NUMPY_VIEW = {torch.bfloat16: (torch.int16, np.int16)}


def dtype_name(dtype):
    if dtype not in DTYPE_NAMES:
        raise TypeError(f"kbx cannot store tensors of dtype {dtype}")
    return DTYPE_NAMES[dtype]


def _as_numpy(t):
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous()
    if t.dtype in _NUMPY_VIEW:
        t = t.view(_NUMPY_VIEW[t.dtype][0])
    if t.is_conj():
        t = t.resolve_conj()
    return t.numpy()


def write_kbt(path, tensors):
    """Write an ordered mapping name -> torch.Tensor to path."""
    with open(path, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<I", len(tensors)))
        for name, t in tensors.items():
            nb = name.encode("utf-8")
            dn = dtype_name(t.dtype).encode()
            arr = _as_numpy(t)
            f.write(struct.pack("<H", len(nb)) + nb)
            f.write(struct.pack("<H", len(dn)) + dn)
            f.write(struct.pack("<B", t.dim()))
            for s in t.shape:
                f.write(struct.pack("<q", s))
            f.write(struct.pack("<Q", arr.nbytes))
            if arr.nbytes:
                f.write(memoryview(arr.reshape(-1)).cast("B"))


def read_kbt(path, device="cpu"):
    """Read a .kbt file into an ordered dict name -> torch.Tensor on device."""
    out = {}
    with open(path, "rb") as f:
        if f.read(8) != MAGIC:
            raise ValueError(f"{path}: not a kbx tensor file")
        (count,) = struct.unpack("<I", f.read(4))
        for _ in range(count):
            (nl,) = struct.unpack("<H", f.read(2))
            name = f.read(nl).decode("utf-8")
            (dl,) = struct.unpack("<H", f.read(2))
            dtype = NAME_TO_DTYPE[f.read(dl).decode()]
            (ndim,) = struct.unpack("<B", f.read(1))
            shape = struct.unpack(f"<{ndim}q", f.read(8 * ndim)) if ndim else ()
            (nbytes,) = struct.unpack("<Q", f.read(8))
            view_dtype, np_dtype = _NUMPY_VIEW.get(dtype, (dtype, None))
            if np_dtype is None:
                np_dtype = torch.empty((), dtype=dtype).numpy().dtype
            arr = np.empty(shape, dtype=np_dtype)
            if nbytes:  # straight into the array: these files reach gigabytes
                if f.readinto(memoryview(arr.reshape(-1)).cast("B")) != nbytes:
                    raise ValueError(f"{path}: truncated tensor {name}")
            t = torch.from_numpy(arr)
            if view_dtype is not dtype:
                t = t.view(dtype)
            out[name] = t.to(device) if device != "cpu" else t
    return out
