"""Misuse and failures at run time: what a user gets instead of a crash or silent damage."""

import os

import numpy as np
import pytest

from rljax.utils import checkpoint as ckpt


def test_an_old_version_that_cannot_be_removed_warns_and_the_save_stands(tmp_path, monkeypatch):
    path = tmp_path / "c"
    ckpt.save_checkpoint(path, {"i": 1}, {"w": np.ones(3)})
    real_replace = os.replace

    def replace(src, dst):
        if ".tmp-old-" in str(dst):  # the retention step renaming an old version away
            raise PermissionError(13, "Permission denied")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.warns(RuntimeWarning) as record:
        final = ckpt.save_checkpoint(path, {"i": 2}, {"w": np.full(3, 2.0)})
    message = str(record[0].message)
    assert str(path / "v-000001") in message and "Permission denied" in message
    assert final == path / "v-000002" and (path / "LATEST").read_text() == "v-000002"
    assert ckpt.load_metadata(path)[0]["i"] == 2
    # The old version stays complete, and the next save removes it.
    assert ckpt.load_metadata(path / "v-000001")[0]["i"] == 1
    monkeypatch.setattr(os, "replace", real_replace)
    ckpt.save_checkpoint(path, {"i": 3}, {"w": np.full(3, 3.0)})
    assert sorted(p.name for p in path.iterdir()) == ["LATEST", "v-000003"]
