"""An actor's running policy and hot reload of the learner's snapshots, with validation.

Learner snapshots (ONNX bytes, :mod:`morl_robot.serving.export`) are opened on a worker thread
(:class:`ModelLoader`: the newest request wins, the acting loop never waits for onnxruntime) and
become the running model only if :func:`validate_candidate` accepts them: the new model's contract
must be compatible with the running one's (:meth:`PolicyContract.check_compatible`: same task,
labels, objectives, ranges) and it must give a finite action on the newest observation.  A
rejected model is reported with the reason and the running model keeps serving.
"""
from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from morl_robot.serving.contract import ContractError
from morl_robot.serving.runtime import (
    NonFiniteInput,
    NonFiniteOutput,
    OnnxPolicy,
    PolicyLoadError,
)


@dataclass
class Loaded:
    """What the worker made of one model: the policy, or why not."""

    policy: OnnxPolicy | None
    source: str  # where it came from (for the log)
    error: str = ""


def is_serving(policy: OnnxPolicy | None, data: bytes) -> bool:
    """Whether ``data`` is the model already serving (a latched re-delivery)."""
    return (policy is not None and len(data) == policy.info.size_bytes
            and hashlib.sha256(data).hexdigest() == policy.digest)


def validate_candidate(running: OnnxPolicy | None, candidate: OnnxPolicy,
                       observation: np.ndarray | None = None) -> str:
    """Why ``candidate`` may not replace ``running`` ("" = it may): an incompatible contract, or a
    non-finite action on ``observation`` (O,) (the newest one, in the candidate's labels; a
    non-finite observation is the sensor's fault, not the model's)."""
    if running is not None:
        try:
            running.contract.check_compatible(candidate.contract)
        except ContractError as exc:
            return str(exc)
    if observation is not None:
        try:
            candidate.act(observation, deterministic=True)
        except NonFiniteOutput as exc:
            return f"non-finite output on the newest observation: {exc}"
        except NonFiniteInput:
            pass
    return ""


class ModelLoader:
    """Opens models on a worker thread; the caller collects them with :meth:`take` (newest
    request wins: a request made while one loads replaces any not yet started)."""

    def __init__(self, expected: Callable[[], OnnxPolicy | None]) -> None:
        self._expected = expected  # the running policy (its contract is checked at load)
        self._lock = threading.Lock()
        self._queue: tuple[bytes, str] | None = None
        self._results: list[Loaded] = []
        self._busy = False
        self._closed = False
        self._thread: threading.Thread | None = None

    def request(self, data: bytes, source: str) -> None:
        with self._lock:
            if self._closed:
                return
            self._queue = (data, source)
            if self._busy:
                return
            self._busy = True
            self._thread = threading.Thread(target=self._work, name="policy_loader", daemon=True)
            self._thread.start()

    def close(self, timeout: float = 30.0) -> None:
        """Take no more requests, drop the queued one and wait for a model being opened: an
        onnxruntime session half-built on a daemon thread when the interpreter exits leaves its
        C++ threads joinable, and the process aborts (``terminate called without an active
        exception``) instead of exiting 0."""
        with self._lock:
            self._closed, self._queue, thread = True, None, self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def ready(self) -> bool:
        return bool(self._results)

    def take(self) -> list[Loaded]:
        with self._lock:
            results, self._results = self._results, []
        return results

    def _work(self) -> None:
        while True:
            with self._lock:
                item, self._queue = self._queue, None
                if item is None:
                    self._busy = False
                    return
            data, source = item
            running = self._expected()
            try:
                result = Loaded(OnnxPolicy.from_bytes(data, running.contract if running is not None else None), source)
            except (PolicyLoadError, ContractError) as exc:
                result = Loaded(None, source, str(exc))
            except Exception as exc:  # noqa: BLE001 - the worker must survive anything a bad model provokes
                result = Loaded(None, source, f"{type(exc).__name__}: {exc}")
            with self._lock:
                self._results.append(result)
