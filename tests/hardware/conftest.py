"""Fixtures of the hardware-backend tests (helpers live in hw_helpers.py)."""
import pytest
from hw_helpers import DriverLoop


@pytest.fixture
def sawyer_loop() -> DriverLoop:
    return DriverLoop("sawyer")


@pytest.fixture
def hand_loop() -> DriverLoop:
    return DriverLoop("shadow_hand")
