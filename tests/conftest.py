"""Shared fixtures and markers; shared functions live in helpers.py."""
import pytest

from helpers import make_problem


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: runs a script in a subprocess (minutes); "
                                       "CI runs these too, deselect with -m 'not slow'")


@pytest.fixture
def problem():
    return make_problem()
