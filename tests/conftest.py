"""Test settings: JAX on the CPU, one device (multi-device tests run in subprocesses)."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
