"""Reads back what the loggers wrote, with the formats' own readers where they exist:
TensorBoard's ``EventAccumulator``; Weights & Biases' offline run file (its record framing,
read here, and its own protobuf ``Record`` type)."""

from __future__ import annotations

import glob
import json
import struct
import time
from pathlib import Path


def tensorboard_scalars(logdir) -> dict[str, list[tuple[int, float]]]:
    """tag -> [(step, value)] of every scalar in ``logdir``'s event files."""
    from tensorboard.backend.event_processing import event_accumulator

    acc = event_accumulator.EventAccumulator(str(logdir))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def _wandb_chunks(data: bytes) -> list[bytes]:
    """The records of a W&B run file: a 7-byte header (":W&B", magic, version), then
    LevelDB-log framing in 32 KiB blocks (crc32, little-endian length, type: 1 full, 2 first,
    3 middle, 4 last)."""
    assert data[:4] == b":W&B", data[:8]
    block, pos, out, pending = 32768, 7, [], b""
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if length == 0 and kind == 0:
            pos += left
            continue
        chunk = data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind == 1:
            out.append(chunk)
        elif kind == 2:
            pending = chunk
        elif kind == 3:
            pending += chunk
        else:
            out.append(pending + chunk)
            pending = b""
    return out


def wandb_offline_run(logdir) -> tuple[dict, list[tuple[int, dict]]]:
    """``(config, [(step, values)])`` of the one offline W&B run under ``logdir/wandb``."""
    from wandb.proto import wandb_internal_pb2

    (path,) = glob.glob(str(Path(logdir) / "wandb" / "offline-run-*" / "run-*.wandb"))
    # W&B's writer is its own process: the file can still be filling after ``finish()``
    # returns (seen on a loaded 2-core machine). It is whole once its ``exit`` record is there.
    deadline = time.monotonic() + 60
    while True:
        records = []
        try:
            for chunk in _wandb_chunks(Path(path).read_bytes()):
                record = wandb_internal_pb2.Record()
                record.ParseFromString(chunk)
                records.append(record)
        except Exception:  # a record half written: read again
            if time.monotonic() >= deadline:
                raise
            records = []
        if any(r.WhichOneof("record_type") == "exit" for r in records):
            break
        assert time.monotonic() < deadline, f"{path} has no exit record after 60 s"
        time.sleep(0.2)
    config: dict = {}
    history: list[tuple[int, dict]] = []
    for record in records:
        kind = record.WhichOneof("record_type")
        updates = (
            record.config.update
            if kind == "config"
            else record.run.config.update
            if kind == "run"
            else ()
        )
        for item in updates:
            if not item.key.startswith("_"):
                config[item.key] = json.loads(item.value_json)
        if kind == "history":
            values = {
                (item.key or "/".join(item.nested_key)): json.loads(item.value_json)
                for item in record.history.item
            }
            values = {k: v for k, v in values.items() if not k.startswith("_")}
            history.append((record.history.step.num, values))
    return config, history
