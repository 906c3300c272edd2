"""Shared test setup: single-threaded torch (2 cores are shared), headless rendering."""
import os

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("OMP_NUM_THREADS", "1")

try:  # torch is optional for the non-learning tests
    import torch

    torch.set_num_threads(1)
except ImportError:  # pragma: no cover
    pass
