"""What people and their tools see of a session (no ROS here): the scene's geometry and poses
(:mod:`morl_robot.views.scene`) and the named, typed views of task steps and commands
(:mod:`morl_robot.views.named`).  The robot node turns them into messages (``nodes/views.py``);
the topics are in ``nodes/wire.py`` (``scene``, ``view/…``)."""
