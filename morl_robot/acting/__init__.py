"""The actor core (no ROS): what every actor of a training session does, in one place.

* :mod:`~morl_robot.acting.experience` — the experience table format (the columns of an
  ``experience`` chunk), the writer that turns acting + the next step into transitions and chunks,
  and the learner's back-pressure allowance;
* :mod:`~morl_robot.acting.policy` — the running ONNX policy of an actor, batched exploration and
  hot reload of learner snapshots with validation;
* :mod:`~morl_robot.acting.server` — what ``policy_server`` decides: acting on task steps (lockstep
  or at realtime ticks), holds and their reasons, model reloads, the preference of an
  ε-conditioned policy, the counters its diagnostics report;
* :mod:`~morl_robot.acting.vector` — B simulated task environments stepped by one batched policy
  forward, every command through the robot's safety rules.

The nodes (``policy_server``, ``vector_actor``) only translate messages to these calls and back.
"""
