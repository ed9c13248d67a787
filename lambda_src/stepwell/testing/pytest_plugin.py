"""pytest plugin (entry point `pytest11`): Stepwell's fixtures for in-process and deployed tests."""

from stepwell.testing.deployed_fixtures import *  # noqa: F403
from stepwell.testing.local_fixtures import *  # noqa: F403
