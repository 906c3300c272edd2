"""Policy versions of a run: the state a divergence rolls back to, exported as ONNX with the
policy contract and handed to ``on_snapshot`` (the learner node publishes them), kept as
``snapshots/policy_<env_steps>.onnx``."""
from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - typing only
    from morl_robot.learning.learner import MOMPOLearner
    from morl_robot.learning.normalization import RunningNormalizer
    from morl_robot.serving.contract import PolicyContract


class Snapshots:
    """Policy versions and their export for a :class:`LearnerSession`."""

    # the session's state (set by :class:`~morl_robot.training.session.LearnerSession`)
    learner: MOMPOLearner
    normalizer: RunningNormalizer | None
    contract: PolicyContract | None
    run_dir: Path | None
    counters: dict[str, int]
    on_snapshot: Callable[[int, bytes], None] | None
    _good_state: dict[str, Any] | None
    _snapshot_updates: int

    def snapshot(self, bump: bool, publish: bool = True) -> bytes | None:
        """Make the current policy the next (``bump``) or the current version: the state a
        divergence rolls back to; with a contract and ``publish``, its ONNX bytes go to
        ``on_snapshot`` and are returned."""
        if bump:
            self.counters["policy_version"] += 1
        self._snapshot_updates = self.learner.num_updates
        self._good_state = copy.deepcopy(self.learner.state_dict())
        if not publish or self.contract is None:
            return None
        data = self._export()
        if self.on_snapshot is not None:
            self.on_snapshot(self.counters["policy_version"], data)
        return data

    def publish_policy(self) -> None:
        """The policy actors start from (at activation): version 1 of a new run, the checkpoint's
        version of a resumed one, a new version if the weights changed since the last one; a
        fresh run also keeps it as the first snapshot (the "before" of every learning curve)."""
        if self.counters["policy_version"] == 0:
            self.counters["policy_version"] = 1
        self.snapshot(bump=self.learner.num_updates != self._snapshot_updates)
        if self.learner.num_updates == 0 and self.counters["env_steps"] == 0:
            self.keep_snapshot()

    #: ONNX bytes by policy version while the final artefacts are written (nothing changes the
    #: weights then: the final snapshot, its kept copy and policy.onnx are one export); else None.
    _final_exports: dict[int, bytes] | None = None

    def _export(self, path: Path | None = None) -> bytes:
        from morl_robot.serving.contract import replace as replace_contract
        from morl_robot.serving.export import export_policy, write_atomically

        assert self.contract is not None
        version, memo = self.counters["policy_version"], self._final_exports
        if memo is not None and version in memo:
            if path is not None:
                write_atomically(path, memo[version])
            return memo[version]
        contract = replace_contract(self.contract, policy_version=version)
        data = export_policy(self.learner.policy, contract, path, normalizer=self.normalizer)
        if memo is not None:
            memo[version] = data
        return data

    def keep_snapshot(self) -> None:
        """Keep the current policy as ``snapshots/policy_<env_steps>.onnx`` (with a contract)."""
        if self.contract is not None and self.run_dir is not None:
            self._export(self.run_dir / "snapshots" / f"policy_{self.counters['env_steps']:08d}.onnx")
