"""Reward machines and multi-objective reward machines (MORM; Aronis et al.): machines as YAML
data with exact guard validation (machine.py, guards.py), their reachable product (product.py)."""
from morl_robot.reward_machines.machine import (
    RewardMachine,
    load_machine,
    machine_from_mapping,
)
from morl_robot.reward_machines.product import ProductMachine, build_product

__all__ = ["ProductMachine", "RewardMachine", "build_product", "load_machine", "machine_from_mapping"]
