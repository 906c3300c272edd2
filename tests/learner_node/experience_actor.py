"""A stand-in actor for the learner_node tests, and the chunk builder they share.

Run as a separate process (``python experience_actor.py --domain D --namespace /ns --actor 3``)
it joins the DDS domain like a remote ``policy_server`` would: waits for the learner's latched
``policy_snapshot``, loads it with :class:`~morl_robot.serving.runtime.OnnxPolicy`, acts on
random-walk observations with the exploring policy (``mean + std·N(0, 1)``, clipped, and its
behaviour log-probability), picks up newer snapshots as they arrive, and publishes ``experience``
chunks.  It prints one JSON line (chunks sent, snapshot versions used) and exits 0.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from morl_robot.nodes import wire


class RandomWalkActor:
    """Plausible experience of one actor: observations (O,) follow a random walk within an episode,
    rewards (K,) are random, the episode ends (terminated) every ``episode_length`` steps."""

    def __init__(self, actor: int, observation_labels, action_labels, objectives, seed: int = 0,
                 episode_length: int = 24) -> None:
        self.actor = actor
        self.columns = wire.experience_columns(observation_labels, action_labels, objectives)
        self.o, self.d, self.k = len(observation_labels), len(action_labels), len(objectives)
        self.rng = np.random.default_rng(seed)
        self.episode_length = episode_length
        self.episode, self.step = 1, 0
        self.obs = self.rng.normal(size=self.o)

    def chunk(self, rows: int, policy=None, version: int = 0) -> np.ndarray:
        """``rows`` consecutive transitions as an experience table (R, C)."""
        table = np.zeros((rows, len(self.columns)))
        o, d, k = self.o, self.d, self.k
        for i in range(rows):
            if policy is not None:
                out = policy.act(self.obs, deterministic=False, rng=self.rng)
                action, log_prob = out.action, out.log_prob
            else:
                action, log_prob = self.rng.uniform(-1, 1, d), float(self.rng.normal(-2.0, 0.5))
            next_obs = self.obs + 0.1 * self.rng.normal(size=o)
            self.step += 1
            done = self.step >= self.episode_length
            table[i, :4] = [self.actor, version, self.episode, self.step]
            table[i, 4:4 + o] = self.obs
            table[i, 4 + o:4 + o + d] = action
            table[i, 4 + o + d] = log_prob
            table[i, 5 + o + d:5 + o + d + k] = self.rng.normal(size=k)
            table[i, 5 + o + d + k:5 + 2 * o + d + k] = next_obs
            table[i, -2] = float(done)  # terminated
            self.obs = next_obs
            if done:
                self.episode, self.step = self.episode + 1, 0
                self.obs = self.rng.normal(size=o)
        return table

    def message(self, rows: int, policy=None, version: int = 0):
        return wire.labelled_table(self.chunk(rows, policy, version), self.columns)


def snapshot_version(msg) -> int:
    label = msg.layout.dim[0].label
    assert label.startswith("policy_version="), label
    return int(label.split("=", 1)[1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--domain", type=int, required=True)
    p.add_argument("--namespace", required=True)
    p.add_argument("--actor", type=int, required=True)
    p.add_argument("--chunks", type=int, default=20)
    p.add_argument("--rows", type=int, default=16)
    p.add_argument("--period", type=float, default=0.05, help="s between chunks")
    args = p.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    from std_msgs.msg import Float64MultiArray, UInt8MultiArray

    from morl_robot.nodes.probe import GraphProbe
    from morl_robot.serving.runtime import OnnxPolicy

    ns = args.namespace.rstrip("/")
    probe = GraphProbe(args.domain, name=f"test_actor_{args.actor}")
    try:
        snapshots = probe.subscribe(f"{ns}/policy_snapshot", UInt8MultiArray, wire.LATCHED_QOS)
        pub = probe.publisher(f"{ns}/experience", Float64MultiArray, wire.EXPERIENCE_QOS)
        probe.wait_for(lambda: bool(snapshots), 60, "the learner's first policy snapshot")
        probe.wait_for_subscribers(pub, timeout=60)
        seen = len(snapshots)
        policy = OnnxPolicy.from_bytes(bytes(snapshots[-1][1].data))
        actor = RandomWalkActor(args.actor, policy.contract.observation_labels, policy.contract.action_labels,
                                policy.contract.objective_names, seed=100 + args.actor)
        versions = [policy.version]
        for _ in range(args.chunks):
            if len(snapshots) > seen:  # hot-reload the newest snapshot
                seen = len(snapshots)
                policy = OnnxPolicy.from_bytes(bytes(snapshots[-1][1].data), expected=policy.contract)
                versions.append(policy.version)
            pub.publish(actor.message(args.rows, policy, policy.version))
            time.sleep(args.period)
        time.sleep(1.0)  # let the reliable writer deliver the last chunks before leaving the domain
        print(json.dumps({"actor": args.actor, "chunks": args.chunks, "rows": args.rows, "versions": versions}))
    finally:
        probe.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
