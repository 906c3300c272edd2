"""Register the Gymnasium ids on ``import morl_robot`` (string entry points: importing the
package stays cheap; MuJoCo loads on ``gymnasium.make``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from morl_robot.reward_machines.env import RewardMachineEnv

ENV_IDS: dict[str, str] = {
    "morl_robot/SawyerPegInHole-v0": "sawyer_peg_in_hole",
    "morl_robot/ShadowTouch-v0": "shadow_touch",
    "morl_robot/ShadowTurn-v0": "shadow_turn",
    "morl_robot/ShadowOrient-v0": "shadow_orient",
}


#: reward-machine examples: id → (entry point, kwargs)
RM_ENV_IDS: dict[str, tuple[str, dict]] = {
    **{f"morl_robot/ButtonWorld-{pair}-v0": ("morl_robot.experiments.button_world:make_env", {"pair": pair})
       for pair in ("term-term", "once-once", "term-cycle", "once-cycle", "cycle-cycle")},
    "morl_robot/SawyerPegInHoleRM-v0": ("morl_robot.envs.registration:make_rm_task_env",
                                        {"spec": "sawyer/peg_touch_then_insert"}),
}


def register_envs() -> None:
    import gymnasium

    for env_id, (entry_point, kwargs) in RM_ENV_IDS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=entry_point, kwargs=kwargs, disable_env_checker=True)

    for env_id, task in ENV_IDS.items():
        if env_id in gymnasium.registry:
            continue
        # The task itself truncates at its episode duration ('time_limit'); the passive checker
        # is off because the reward is a vector (MO-Gymnasium convention).
        gymnasium.register(
            id=env_id,
            entry_point="morl_robot.envs.mo_env:MORobotEnv",
            kwargs={"task": task},
            disable_env_checker=True,
        )


def make_rm_task_env(spec: str = "sawyer/peg_touch_then_insert", **env_kwargs: Any) -> RewardMachineEnv:
    """The product environment of a robot task and its reward machine ``spec`` (Gymnasium id
    ``morl_robot/SawyerPegInHoleRM-v0``): its product with the machine."""
    from morl_robot.envs.mo_env import MORobotEnv
    from morl_robot.reward_machines.env import load_rm_task, wrap_task_env

    return wrap_task_env(MORobotEnv(load_rm_task(spec)[0].task, **env_kwargs), spec)
