"""An rljax callback for ``test_ray_cluster``'s killed-node test, imported by Ray's worker
processes (the cluster fixture puts this folder on their ``PYTHONPATH``).

A trial on the node named in ``$RLJAX_TEST_GATE_DIR/hold_node`` holds its second iteration's
result until that node is gone, so the node is always killed mid-run: without the hold, a
tiny trial could finish every iteration (its worker outlives its stopped raylet for a moment)
before the driver's kill took effect. On any other node the hook returns at once.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from rljax.callbacks import RLlibCallback

# A hang guard only: the held worker is ended with its node within seconds.
HOLD_LIMIT_S = 300.0


class HoldOnTheDoomedNode(RLlibCallback):
    """Holds ``train()`` from the second iteration on while on the node to be killed."""

    def on_train_result(self, *, algorithm: Any, result: dict, **kwargs: Any) -> None:
        import ray

        path = Path(os.environ["RLJAX_TEST_GATE_DIR"]) / "hold_node"
        if result["training_iteration"] < 2 or not path.exists():
            return
        if path.read_text() != ray.get_runtime_context().get_node_id():
            return
        deadline = time.monotonic() + HOLD_LIMIT_S
        while time.monotonic() < deadline:
            time.sleep(0.1)
