"""Sessions: the node processes of a training, deployment or safety-test run, started from one
session YAML by ``morl-robot`` (or by ``ros2 launch`` from the same YAML)."""
