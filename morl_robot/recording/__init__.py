"""MCAP recordings of a session's topics (``--record``, ``record:=true``; docs/howto/record.md).

* :mod:`.schema` — ROS 2 message definitions (``ros2msg``, nested types concatenated) from the
  installed ``.msg`` files, and where a type's header stamp sits in its CDR bytes.
* :mod:`.selection` — which topics of the graph a session records.
* :mod:`.writer` — :class:`~.writer.RecordingWriter`: a bounded queue and a writer thread in front
  of an MCAP file (profile ``ros2``, encoding ``cdr``); drops counted, never blocking.
* :mod:`.reader` — :func:`~.reader.read_messages`: ``(topic, log_time_ns, message)`` back out of a
  recording (also of one cut short by SIGKILL).

Nothing here imports rclpy; the ``recorder`` node (:mod:`morl_robot.nodes.recorder`) is the thin
ROS side.
"""
from morl_robot.recording.reader import (
    RecordedMessage,
    read_messages,
    recording_path,
    topics_of,
)

__all__ = ["RecordedMessage", "read_messages", "recording_path", "topics_of"]
