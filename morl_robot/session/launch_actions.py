"""For the launch files in ``launch/``: session YAML + launch arguments → launch_ros Node actions.

Imports ROS's ``launch`` packages, which a ROS install provides (they are not on PyPI); nothing
else in the package imports this module.

The graph itself comes from :func:`morl_robot.session.graph.session_nodes`, the same function
``morl-robot train|deploy|safety-test`` uses, so ``ros2 launch`` and the CLI start the same nodes
with the same parameters from the same ``config/sessions/*.yaml``.
"""
from __future__ import annotations

from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

#: Launch arguments (name, default, description); "" = take the session YAML's value.
ARGUMENTS = (
    ("session", "", "session YAML (default: config/sessions/<kind>.yaml)"),
    ("robot", "", "robot: sawyer | shadow_hand"),
    ("task", "", "task name (morl-robot tasks)"),
    ("backend", "", "sim | hardware"),
    ("actors", "", "training: number of actor pipelines"),
    ("namespace", "", "ROS namespace of the session"),
    ("policy", "", "deploy: ONNX policy file"),
    ("out", "runs/latest", "training: run directory"),
    ("use_sim_time", "false", "nodes follow /clock (sim backend)"),
)


def declare_arguments() -> list:
    return [DeclareLaunchArgument(name, default_value=default, description=text) for name, default, text in ARGUMENTS]


def _nodes(kind: str, context) -> list:
    from morl_robot.session.config import load_session_config
    from morl_robot.session.graph import session_nodes

    def arg(name: str) -> str:
        return LaunchConfiguration(name).perform(context)

    overrides = {key: arg(key) or None for key in ("robot", "task", "backend", "namespace", "policy")}
    if arg("actors"):
        overrides["actors"] = int(arg("actors"))
    cfg = load_session_config(arg("session") or kind, overrides)
    use_sim_time = arg("use_sim_time").lower() == "true"
    return [
        Node(package="morl_robot", executable=spec.executable, name=spec.name, namespace=spec.namespace,
             parameters=[{**spec.parameters, "use_sim_time": use_sim_time}],
             remappings=list(spec.remappings.items()), output="screen")
        for spec in session_nodes(kind, cfg, arg("out"))
    ]


def session_launch(kind: str) -> list:
    """Launch entities for a session of ``kind`` (train, deploy, safety_test)."""
    return declare_arguments() + [OpaqueFunction(function=lambda context: _nodes(kind, context))]
