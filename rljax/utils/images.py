"""RLlib's image helpers (``ray.rllib.utils.images``): ``resize``, ``rgb2gray`` and ``imread``,
on OpenCV as RLlib's are (``pip install opencv-python-headless``; the ``video`` and ``test``
extras have it). OpenCV is imported when a helper is first called."""

from __future__ import annotations

import os
from types import ModuleType

import numpy as np

_cv2: ModuleType | None = None


def _opencv() -> ModuleType:
    global _cv2
    if _cv2 is None:
        try:
            import cv2
        except ImportError as e:
            raise ModuleNotFoundError(
                "rljax.utils.images needs OpenCV: pip install opencv-python-headless "
                f"(importing cv2 failed: {e})"
            ) from e
        cv2.ocl.setUseOpenCL(False)  # as RLlib: no OpenCL context in every process
        _cv2 = cv2
    return _cv2


def resize(img: np.ndarray, height: int, width: int) -> np.ndarray:
    """``img`` (``[H, W]`` or ``[H, W, C]``) resized to ``height`` x ``width`` by area
    interpolation (``cv2.INTER_AREA``), its dtype kept."""
    cv2 = _opencv()
    return cv2.resize(img, (width, height), interpolation=cv2.INTER_AREA)


def rgb2gray(img: np.ndarray) -> np.ndarray:
    """An RGB image ``[H, W, 3]`` as grayscale ``[H, W]`` (``0.299 R + 0.587 G + 0.114 B``,
    OpenCV's ``COLOR_RGB2GRAY``)."""
    cv2 = _opencv()
    return cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)


def imread(img_file: str | os.PathLike[str]) -> np.ndarray:
    """The image file as ``float32`` ``[H, W, 3]``, in OpenCV's channel order (BGR) as RLlib's
    ``imread`` returns it.

    Raises:
      FileNotFoundError: The file is missing or OpenCV cannot read it as an image.
    """
    cv2 = _opencv()
    image = cv2.imread(os.fspath(img_file))
    if image is None:
        raise FileNotFoundError(f"imread({os.fspath(img_file)!r}): no image OpenCV can read there")
    return image.astype(np.float32)


__all__ = ["imread", "resize", "rgb2gray"]
