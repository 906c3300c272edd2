"""`ros2 launch morl_robot safety_test.launch.py [robot:=sawyer|shadow_hand] [backend:=sim|hardware] [seed:=N]
[namespace:=…] [out:=DIR] [use_sim_time:=true|false] [session:=FILE]
[record:=true] [foxglove:=true] [foxglove_port:=8765]`

Starts the nodes of `config/sessions/safety_test.yaml` (see morl_robot/session/launch_actions.py) and
`morl-robot safety-test --attach`, which probes them and writes the same report.json / report.md / plots and
pass/fail as `morl-robot safety-test`; the launch ends with the result.
record:=true writes the session's topics to <out>/session.mcap; foxglove:=true serves a live Foxglove view
(docs/howto/record.md, docs/howto/rviz_foxglove.md).
"""
from launch import LaunchDescription
from morl_robot.session.launch_actions import session_launch


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(session_launch("safety_test"))
