"""config/rviz/morl_robot.rviz shows the contract's scene: fixed frame world, a MarkerArray display
on the session's scene topic with the topic's best-effort QoS (RViz itself is not installed here)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

pytest.importorskip("rclpy")
from morl_robot.nodes import wire
from morl_robot.nodes.views import FRAME

RVIZ = Path(__file__).resolve().parents[2] / "config" / "rviz" / "morl_robot.rviz"


def test_rviz_config_shows_the_scene_topic():
    manager = yaml.safe_load(RVIZ.read_text())["Visualization Manager"]
    assert manager["Global Options"]["Fixed Frame"] == FRAME
    (scene,) = [d for d in manager["Displays"] if d["Class"] == "rviz_default_plugins/MarkerArray"]
    topic = next(t for t in wire.TOPICS if t.name == "scene")
    assert scene["Topic"]["Value"] == "/morl/" + topic.name and topic.type == "visualization_msgs/msg/MarkerArray"
    assert scene["Topic"]["Reliability Policy"] == "Best Effort" == wire.VIEW_QOS.reliability.name.replace("_", " ").title()
