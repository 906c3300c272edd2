"""The live view's Foxglove dashboard: config/foxglove/morl_robot_layout.json, built with the SDK's
typed layout model (``foxglove.layouts``, the JSON Foxglove's *Import layout* reads).

A 3D panel of ``/scene`` (frame ``world``), plots of the objectives' returns and rewards and of the
contact forces, an e-stop indicator and the raw safety violations; the channels are
:data:`morl_robot.views.foxglove.CHANNELS`.  Regenerate the committed file with
``python -m morl_robot.views.foxglove_layout > config/foxglove/morl_robot_layout.json`` (a test checks
they agree).  docs/howto/rviz_foxglove.md.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: The committed layout.
LAYOUT_PATH = Path(__file__).resolve().parents[2] / "config" / "foxglove" / "morl_robot_layout.json"
#: Objectives plotted: every task's (config/tasks/*.yaml); a session shows its own, the others stay empty.
OBJECTIVES = ("task", "wrist_force", "pain", "touch", "lift", "orient")


def layout() -> Any:
    """The dashboard as a ``foxglove.layouts.Layout``."""
    import foxglove.layouts as fl

    def plot(title: str, paths: list[tuple[str, str]]) -> Any:
        return fl.PlotPanel(title=title, config=fl.PlotConfig(
            paths=[fl.PlotSeries(value=p, label=label) for p, label in paths], show_legend=True,
            legend_display="top", time_range="latest", following_view_width=20.0))

    three_d = fl.ThreeDeePanel(title="scene (world)", config=fl.ThreeDeeConfig(
        fixed_frame="world", follow_tf="world",
        camera_state=fl.ThreeDeeCameraState(distance=2.2, perspective=True, phi=60.0, theta_offset=135.0,
                                            target=(0.6, 0.0, 0.3), fovy=45.0, near=0.01, far=50.0),
        topics={"/scene": fl.BaseRendererSceneUpdateTopicSettings(visible=True)}))
    estop = fl.IndicatorPanel(title="e-stop", config=fl.IndicatorConfig(
        path="/safety/estop.engaged", style="background",
        rules=[fl.IndicatorRule(raw_value="true", operator="=", color="#d32f2f", label="E-STOP engaged")],
        fallback_color="#2e7d32", fallback_label="running"))
    violations = fl.RawMessagesPanel(title="safety violations", config=fl.RawMessagesConfig(
        topic_path="/safety/violations", expansion="all"))
    right = fl.SplitContainer(direction="column", items=[
        fl.SplitItem(proportion=1, content=plot("returns", [(f"/objectives.return.{o}", o) for o in OBJECTIVES])),
        fl.SplitItem(proportion=1, content=plot("rewards", [(f"/objectives.reward.{o}", o) for o in OBJECTIVES])),
        fl.SplitItem(proportion=1, content=plot("contact force (N)", [
            ("/wrench.force.norm", "wrist |F|"), ("/tactile.total", "tactile total")])),
        fl.SplitItem(proportion=1, content=fl.SplitContainer(direction="row", items=[
            fl.SplitItem(proportion=1, content=estop), fl.SplitItem(proportion=2, content=violations)])),
    ])
    return fl.Layout(content=fl.SplitContainer(direction="row", items=[
        fl.SplitItem(proportion=3, content=three_d), fl.SplitItem(proportion=2, content=right)]))


def layout_json() -> str:
    """The layout as the committed file's text (indented, one trailing newline)."""
    return json.dumps(json.loads(layout().to_json()), indent=1) + "\n"


if __name__ == "__main__":
    print(layout_json(), end="")
