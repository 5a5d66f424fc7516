"""RLlib's serialization formats: spaces as dicts, and msgpack with msgpack-numpy's arrays."""

import base64
import io
import zlib
from collections import OrderedDict

import gymnasium as gym
import msgpack
import numpy as np
import pytest

from rljax.utils import serialization
from rljax.utils.safe_io import unpack_msgpack_numpy
from rljax.utils.serialization import (
    gym_space_from_dict,
    gym_space_to_dict,
    pack_msgpack_numpy,
    space_from_dict,
    space_to_dict,
)

SPACES = [
    gym.spaces.Box(-1.0, 2.0, (3, 2), np.float32),
    gym.spaces.Box(0, 255, (4, 4, 1), np.uint8),
    gym.spaces.Box(np.array([-1.0, -np.inf]), np.array([1.0, np.inf]), dtype=np.float64),
    gym.spaces.Discrete(5, start=-2),
    gym.spaces.MultiBinary(4),
    gym.spaces.MultiBinary([2, 3]),
    gym.spaces.MultiDiscrete([3, 4, 2]),
    gym.spaces.Tuple([gym.spaces.Discrete(2), gym.spaces.Box(-1, 1, (2,))]),
    gym.spaces.Dict(
        OrderedDict(b=gym.spaces.Discrete(3), a=gym.spaces.Box(-1, 1, (1,), np.float32))
    ),
    gym.spaces.Text(6, min_length=1, charset="abc"),
]


@pytest.mark.parametrize("space", SPACES, ids=lambda s: type(s).__name__)
def test_a_space_comes_back_from_its_dict(space):
    d = gym_space_to_dict(space)
    # Plain values only: msgpack writes it without a default hook.
    again = gym_space_from_dict(msgpack.unpackb(msgpack.packb(d), raw=False))
    assert again == space
    if isinstance(space, gym.spaces.Dict):
        assert list(again.keys()) == ["b", "a"]  # the user's order
    assert gym_space_to_dict(None) is None and gym_space_from_dict(None) is None


def test_space_to_dict_keeps_the_original_space():
    space = gym.spaces.Box(-1, 1, (4,))
    space.original_space = gym.spaces.Dict({"x": gym.spaces.Box(-1, 1, (4,))})
    again = space_from_dict(space_to_dict(space))
    assert again == space and again.original_space == space.original_space


@pytest.mark.parametrize("space", SPACES, ids=lambda s: type(s).__name__)
def test_rllibs_reader_and_ours_agree_on_the_format(space):
    rllib = pytest.importorskip("ray.rllib.utils.serialization")
    assert rllib.gym_space_from_dict(gym_space_to_dict(space)) == space
    assert gym_space_from_dict(rllib.gym_space_to_dict(space)) == space


def _npy(array, allow_pickle=False):
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=allow_pickle)
    return base64.b64encode(zlib.compress(buf.getvalue())).decode("ascii")


class _Runs:
    """Unpickling this would create the file at ``path``."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_a_space_dict_from_elsewhere_is_data_only(tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    pickled = _npy(np.array([_Runs(str(marker))], dtype=object), allow_pickle=True)
    box = {"space": "box", "low": pickled, "high": pickled, "shape": [1], "dtype": "<f4"}
    with pytest.raises(ValueError, match="space dict 'box' 'low': not an array of numbers"):
        gym_space_from_dict(box)
    assert not marker.exists()
    with pytest.raises(ValueError, match="Unknown space type .*'simplex'; rljax reads box"):
        gym_space_from_dict({"space": "simplex", "shape": [2]})
    with pytest.raises(ValueError, match="expected a dict with a 'space' name, got list"):
        gym_space_from_dict([1, 2])
    with pytest.raises(ValueError, match="'n' is str, expected an int"):
        gym_space_from_dict({"space": "discrete", "n": "3"})
    with pytest.raises(ValueError, match="not an array"):
        gym_space_from_dict({**box, "low": "@@not base64@@"})
    with pytest.raises(ValueError, match="dtype 'object' is not a number type"):
        gym_space_from_dict(
            {**box, "low": _npy(np.zeros(1)), "high": _npy(np.ones(1)), "dtype": "object"}
        )
    monkeypatch.setattr(serialization, "MAX_ARRAY_BYTES", 1_000)
    with pytest.raises(ValueError, match="larger than 1,000 bytes"):
        gym_space_from_dict({**box, "low": _npy(np.zeros(10_000)), "high": _npy(np.zeros(1))})
    nested = {"space": "tuple", "spaces": []}
    for _ in range(40):
        nested = {"space": "tuple", "spaces": [nested]}
    with pytest.raises(ValueError, match="nested deeper than 32 levels"):
        gym_space_from_dict(nested)


def test_msgpack_numpy_arrays_and_scalars_come_back():
    tree = {
        "a": np.arange(6, dtype=np.int16).reshape(2, 3),
        "f": np.float32(1.5),
        "b": np.bool_(True),
        "l": [np.zeros(2, np.uint8), 3, "x", None],
        "t": (1, 2),
        "c": 1 + 2j,
    }
    back = unpack_msgpack_numpy(pack_msgpack_numpy(tree), "test")
    np.testing.assert_array_equal(back["a"], tree["a"])
    assert back["a"].dtype == np.int16 and back["a"].flags.writeable
    assert back["f"] == np.float32(1.5) and back["f"].dtype == np.float32
    assert back["b"] == np.True_ and back["l"][1:] == [3, "x", None]
    assert back["l"][0].dtype == np.uint8 and back["t"] == [1, 2] and back["c"] == 1 + 2j
    with pytest.raises(ValueError, match=r"cannot write a builtins\.object"):
        pack_msgpack_numpy({"x": object()})
    with pytest.raises(ValueError, match="cannot write a numpy.ndarray"):
        pack_msgpack_numpy({"x": np.array([object()], dtype=object)})


def test_msgpack_numpys_own_codec_reads_and_writes_the_same_bytes():
    mnp = pytest.importorskip("msgpack_numpy")
    tree = {"obs": [np.arange(4, dtype=np.float32)], "a": np.int64(3), "m": np.eye(2)}
    theirs = msgpack.unpackb(pack_msgpack_numpy(tree), object_hook=mnp.decode)
    np.testing.assert_array_equal(theirs["obs"][0], tree["obs"][0])
    assert theirs["a"] == 3 and theirs["a"].dtype == np.int64
    ours = unpack_msgpack_numpy(msgpack.packb(tree, default=mnp.encode), "test")
    np.testing.assert_array_equal(ours["m"], np.eye(2))
    assert ours["a"].dtype == np.int64


def test_msgpack_numpy_data_from_elsewhere_never_unpickles(tmp_path):
    import pickle

    marker = tmp_path / "ran"
    item = msgpack.packb(
        {
            b"nd": True,
            b"type": "|O",
            b"kind": b"O",
            b"shape": [1],
            b"data": pickle.dumps(np.array([_Runs(str(marker))], dtype=object)),
        }
    )
    with pytest.raises(ValueError, match="x.parquet: holds an array of Python objects, which"):
        unpack_msgpack_numpy(item, "x.parquet")
    assert not marker.exists()
    bad = {b"nd": True, b"type": "<f4", b"kind": b"", b"shape": [3], b"data": b"\0" * 8}
    with pytest.raises(ValueError, match=r"shape \(3,\) and dtype float32 whose data is 8 bytes"):
        unpack_msgpack_numpy(msgpack.packb(bad), "x")
    with pytest.raises(ValueError, match="dtype '<U3'; allowed: numbers and booleans"):
        unpack_msgpack_numpy(msgpack.packb({**bad, b"type": "<U3"}), "x")
    with pytest.raises(ValueError, match="x: is not valid msgpack"):
        unpack_msgpack_numpy(b"\xc1", "x")
    with pytest.raises(ValueError, match="x: is str, not msgpack bytes"):
        unpack_msgpack_numpy("text", "x")  # type: ignore[arg-type]
