"""Python codec of the kbx probe wire format (docs/probe.md), written apart from the C++ one so
that each checks the other: tests/fixtures/probe/make_fixtures.py encodes the fixtures with it and
the C++ tests parse them; gpu_check.py decodes what the real probe wrote."""

from __future__ import annotations

import dataclasses
import struct

MAGIC = b"KBXPROBE"
VERSION = 1
HEADER = struct.Struct("<8sHHIIIQ")  # magic version header_size record_size pid cupti_version start_ns
RECORD = struct.Struct("<HHIQQQIIII3i3iQQ200s")
NAME_CAPACITY = 200
assert HEADER.size == 32 and RECORD.size == 288

KIND = {"kernel": 1, "memcpy": 2, "memset": 3, "push": 4, "pop": 5, "flush": 6, "error": 7}
KIND_NAME = {v: k for k, v in KIND.items()}
NAME_TRUNCATED, NO_TIMESTAMP, GRAPH_LAUNCHED, DEVICE_LAUNCHED, EXIT_FLUSH = 1, 2, 4, 8, 16


@dataclasses.dataclass
class Record:
    kind: str
    start_ns: int = 0
    end_ns: int = 0
    external_id: int = 0
    correlation_id: int = 0
    stream_id: int = 0
    device_id: int = 0
    context_id: int = 1
    detail: int = 0
    grid: tuple = (0, 0, 0)
    block: tuple = (0, 0, 0)
    bytes: int = 0
    thread_id: int = 0
    name: str = ""
    flags: int = 0


def encode_header(pid: int, cupti_version: int, start_ns: int, *, magic: bytes = MAGIC,
                  version: int = VERSION, record_size: int = RECORD.size) -> bytes:
    return HEADER.pack(magic, version, HEADER.size, record_size, pid, cupti_version, start_ns)


def encode_record(r: Record) -> bytes:
    name = r.name.encode()
    flags = r.flags
    if len(name) > NAME_CAPACITY - 1:
        name, flags = name[: NAME_CAPACITY - 1], flags | NAME_TRUNCATED
    end_ns = r.end_ns if r.kind in ("kernel", "memcpy", "memset") else r.start_ns
    return RECORD.pack(KIND[r.kind], flags, r.device_id, r.start_ns, end_ns, r.external_id,
                       r.correlation_id, r.stream_id, r.context_id, r.detail, *r.grid, *r.block,
                       r.bytes, r.thread_id, name)


def decode(data: bytes) -> tuple[dict, list[Record]]:
    """Header fields and records of a whole stream; raises ValueError on a bad or cut stream."""
    if len(data) < HEADER.size:
        raise ValueError(f"stream of {len(data)} bytes has no header")
    magic, version, header_size, record_size, pid, cupti, start = HEADER.unpack_from(data)
    if magic != MAGIC or version != VERSION or record_size != RECORD.size:
        raise ValueError(f"bad header: {magic!r} version {version} record size {record_size}")
    body = data[HEADER.size:]
    if len(body) % RECORD.size:
        raise ValueError(f"truncated: {len(body) % RECORD.size} bytes after the last whole record")
    records = []
    for off in range(0, len(body), RECORD.size):
        f = RECORD.unpack_from(body, off)
        records.append(Record(kind=KIND_NAME.get(f[0], str(f[0])), flags=f[1], device_id=f[2],
                              start_ns=f[3], end_ns=f[4], external_id=f[5], correlation_id=f[6],
                              stream_id=f[7], context_id=f[8], detail=f[9], grid=tuple(f[10:13]),
                              block=tuple(f[13:16]), bytes=f[16], thread_id=f[17],
                              name=f[18].split(b"\0", 1)[0].decode(errors="replace")))
    return {"pid": pid, "cupti_version": cupti, "start_ns": start}, records
