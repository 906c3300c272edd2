"""`ros2 launch morl_robot train.launch.py [robot:=…] [task:=…] [backend:=sim|hardware] [actors:=N]
[namespace:=…] [policy:=…] [out:=…] [use_sim_time:=true|false] [session:=FILE]`

Starts the nodes of `config/sessions/train.yaml` (see morl_robot/session/launch_actions.py); the same graph as
`morl-robot train`.
"""
from launch import LaunchDescription
from morl_robot.session.launch_actions import session_launch


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(session_launch("train"))
