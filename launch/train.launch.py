"""`ros2 launch morl_robot train.launch.py [task:=…] [reward_machine:=…] [backend:=sim|hardware] [actors:=N]
[actors_kind:=auto|per-step|vectorized] [envs:=B] [steps:=S]
[seed:=N] [namespace:=…] [learner_config:=…] [out:=DIR] [use_sim_time:=true|false] [session:=FILE]
[record:=true] [foxglove:=true] [foxglove_port:=8765]`

Starts the nodes of `config/sessions/train.yaml` (see morl_robot/session/launch_actions.py), the same graph as
`morl-robot train`; the launch ends when the learner reaches `steps` (or when a node fails, with the reason).
record:=true writes the session's topics to <out>/session.mcap; foxglove:=true serves a live Foxglove view
(docs/howto/record.md, docs/howto/rviz_foxglove.md).
session:= and learner_config:= are names, or files as given or relative to the package.  The learner gets 30 s
after Ctrl-C to write its final checkpoint, policy.onnx and plots before launch escalates to SIGTERM.
"""
from launch import LaunchDescription
from morl_robot.session.launch_actions import session_launch


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(session_launch("train"))
