"""``ros2 launch morl_robot train.launch.py steps:=…``: the launch ends by itself when the learner
reaches its steps (the actors stop with it, the reason is said), with the run's artefacts written
and every process exiting cleanly."""
import tempfile
from pathlib import Path

from launch_helpers import domain_for, require_ros_workspace, run_until_it_ends

require_ros_workspace()

# the default vectorized actor steps 8 environments at once: 1 400 steps lets each finish one 160-step
# (8 s at 20 Hz) episode, still before the learner's first update (2 000 transitions)
STEPS = 1400


def test_the_launch_ends_when_the_learner_reaches_its_steps():
    out = Path(tempfile.mkdtemp()) / "run"
    run = run_until_it_ends("train.launch.py", domain_for(__file__), timeout=600, steps=str(STEPS), seed="5",
                            out=str(out), namespace="launch_train")
    assert run.ended_by_itself, run.output
    assert run.reasons[0] == "training finished: the learner reached its total steps", run.reasons
    # simulated training's default actors are vectorized (actors_kind auto): one vector_actor process
    assert sorted(n.rsplit("-", 1)[0] for n in run.exit_codes) == ["learner_node", "vector_actor"]
    assert set(run.exit_codes.values()) == {0}, run.exit_codes
    steps = [int(p.stem.split("-")[1]) for p in (out / "checkpoints").glob("ckpt-*.pt")]
    assert steps and max(steps) >= STEPS, steps
    assert (out / "policy.onnx").is_file() and (out / "episodes.csv").is_file()
    assert len((out / "episodes.csv").read_text().splitlines()) >= 2  # a header and a finished episode
