"""`ros2 launch morl_robot deploy.launch.py policy:=FILE.onnx [robot:=…] [backend:=sim|hardware] [seed:=N]
[namespace:=…] [release:=operator|after_checks] [use_sim_time:=true|false] [preference:=EPS1,EPS2,…] [session:=FILE]
[out:=DIR] [record:=true] [foxglove:=true] [foxglove_port:=8765]`

Starts the nodes of `config/sessions/deploy.yaml` (see morl_robot/session/launch_actions.py), the same graph as
`morl-robot deploy`.  The safety monitor starts latched: release:=operator (default) waits for a person to call
`<ns>/safety/reset`; release:=after_checks (sim only) releases it once its checks pass.  A node that exits
shuts the launch down with the reason.  An ε-conditioned policy starts under preference:= (default the centre
of its preference box; change it live with `ros2 param set <ns>/policy_server preference "[…]"` or the
`<ns>/preference` topic).
record:=true writes the session's topics to <out>/session.mcap; foxglove:=true serves a live Foxglove view
(docs/howto/record.md, docs/howto/rviz_foxglove.md).
policy:= and session:= are files as given or relative to the package (`results/demo/seed0/policy.onnx` works
from a workspace root); a missing one names every place looked in.
"""
from launch import LaunchDescription
from morl_robot.session.launch_actions import session_launch


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(session_launch("deploy"))
