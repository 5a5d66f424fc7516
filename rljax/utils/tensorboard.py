"""TensorBoard event files of scalars, written without TensorFlow or TensorBoard installed.

An event file is a sequence of TFRecords (little-endian length, masked CRC-32C of the length,
the bytes, masked CRC-32C of the bytes), each an ``Event`` protocol buffer: the first holds
``file_version = "brain.Event:2"``, the others a wall time, a step and a ``Summary`` of
``(tag, simple_value)`` pairs. Only those fields are written, encoded here by hand (the wire
format of the few fields used is small and fixed), so TensorBoard and its readers load the files.
"""

from __future__ import annotations

import os
import socket
import struct
import time
from collections.abc import Mapping
from pathlib import Path


def _crc32c_table() -> list[int]:
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), as TFRecord frames use."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _masked_crc(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


def _field(number: int, wire_type: int) -> bytes:
    return _varint((number << 3) | wire_type)


def _length_delimited(number: int, payload: bytes) -> bytes:
    return _field(number, 2) + _varint(len(payload)) + payload


def _event(wall_time: float, step: int | None = None, body: bytes = b"") -> bytes:
    out = _field(1, 1) + struct.pack("<d", wall_time)  # double wall_time = 1
    if step is not None:  # int64 step = 2 (two's complement varint)
        out += _field(2, 0) + _varint(step & 0xFFFFFFFFFFFFFFFF)
    return out + body


def scalar_event(wall_time: float, step: int, scalars: Mapping[str, float]) -> bytes:
    """One ``Event`` holding a ``Summary`` with a ``simple_value`` per tag."""
    values = b"".join(
        _length_delimited(  # Summary.Value value = 1 {string tag = 1; float simple_value = 2}
            1,
            _length_delimited(1, tag.encode()) + _field(2, 5) + struct.pack("<f", float(value)),
        )
        for tag, value in scalars.items()
    )
    return _event(wall_time, step, _length_delimited(5, values))  # Summary summary = 5


def _record(data: bytes) -> bytes:
    length = struct.pack("<Q", len(data))
    return (
        length
        + struct.pack("<I", _masked_crc(length))
        + data
        + struct.pack("<I", _masked_crc(data))
    )


class EventFileWriter:
    """Appends scalar events to ``logdir/events.out.tfevents.<time>.<host>.<pid>``.

    ``add_scalars(step, {"tag": value, ...})`` writes one event; ``flush()`` pushes it to disk
    (each ``add_scalars`` flushes too, so a crashed run keeps what it logged); ``close()``.
    """

    def __init__(self, logdir: str | os.PathLike[str]):
        self.logdir = Path(os.fspath(logdir))
        self.logdir.mkdir(parents=True, exist_ok=True)
        name = f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}.{os.getpid()}"
        self.path = self.logdir / name
        self._file = open(self.path, "ab")  # noqa: SIM115  (closed by close())
        version = _event(time.time(), body=_length_delimited(3, b"brain.Event:2"))
        self._file.write(_record(version))
        self._file.flush()

    def add_scalars(
        self, step: int, scalars: Mapping[str, float], wall_time: float | None = None
    ) -> None:
        if not scalars:
            return
        when = time.time() if wall_time is None else wall_time
        self._file.write(_record(scalar_event(when, int(step), scalars)))
        self._file.flush()

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()
