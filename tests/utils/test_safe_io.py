"""``rljax.utils.safe_io``: a path that cannot be resolved is the caller's error type."""

from __future__ import annotations

from pathlib import Path

import pytest

from rljax.utils import safe_io
from rljax.utils.errors import ConfigError


def test_a_path_with_a_nul_byte_raises_the_callers_error():
    # os.path.realpath raises ValueError here (not OSError): it has no strerror to show.
    with pytest.raises(ConfigError, match=r"cannot resolve the path \(embedded null byte\)"):
        safe_io.read_yaml(Path("config\0.yaml"), 1024, ConfigError)
