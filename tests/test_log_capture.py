"""tests/log_capture.py reads a logger's records when ROS's ``launch`` made loggers non-propagating
(issue 41: ``colcon test`` loads launch's pytest plugin, whose logger class sets propagate=False)."""
import logging

from tests.log_capture import captured, messages


class _LaunchLikeLogger(logging.getLoggerClass()):  # what launch.logging.LaunchLogger does
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.propagate = False


def test_captured_reads_a_logger_that_does_not_propagate(caplog):
    before = logging.getLoggerClass()
    logging.setLoggerClass(_LaunchLikeLogger)
    try:
        logger = logging.getLogger("morl_robot.tests.log_capture.non_propagating")
    finally:
        logging.setLoggerClass(before)
    assert logger.propagate is False
    caplog.set_level("INFO")
    with captured(logger.name) as records:
        logger.info("critic warm-up: 7 policy-evaluation updates")
        logger.debug("below the level")
    assert messages(records) == "critic warm-up: 7 policy-evaluation updates"
    assert "critic warm-up" not in caplog.text  # what the root handler (caplog) saw: nothing
    assert not logger.handlers and logger.level == logging.NOTSET  # the handler and level are put back
