"""deployed_stack in a user's repository: the client config under either output name, and the backends it
runs on (moto unless LocalStack is asked for; this repository asks for both in pyproject.toml)."""

from __future__ import annotations

from typing import Any

import pytest
from stepwell.testing.deployed_fixtures import client_config_output, deployed_backends_for


@pytest.mark.parametrize("name", ["client_config", "stepwell_client_config"])
def test_the_client_config_is_read_from_either_output_name(name: str) -> None:
    config = {"name": "orders", "worker_function_name": "orders-worker"}
    assert client_config_output({name: config, "other": "x"}) == config


def test_a_stack_without_the_output_names_its_outputs() -> None:
    with pytest.raises(KeyError, match=r"no client_config or stepwell_client_config output.*\['other'\]"):
        client_config_output({"other": {"a": 1}})


class FakeConfig:
    """What deployed_backends_for reads of pytest's config: the options and the ini value."""

    def __init__(self, ini: str = "", **options: Any) -> None:
        self.ini = ini
        self.options = options

    def getoption(self, name: str, default: Any = None) -> Any:
        return self.options.get(name, default)

    def getini(self, name: str) -> str:
        assert name == "stepwell_deployed_backends"
        return self.ini


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("STEPWELL_DEPLOYED_BACKENDS", raising=False)
    monkeypatch.delenv("STEPWELL_BACKEND", raising=False)
    return monkeypatch


def test_a_users_deployed_tests_run_on_moto_alone(clean_environment: pytest.MonkeyPatch) -> None:
    assert deployed_backends_for(FakeConfig()) == ["moto"]  # type: ignore[arg-type]


def test_a_project_lists_its_backends_in_its_ini(clean_environment: pytest.MonkeyPatch) -> None:
    assert deployed_backends_for(FakeConfig("moto localstack")) == ["moto", "localstack"]  # type: ignore[arg-type]


def test_the_environment_and_the_options_win_over_the_ini(clean_environment: pytest.MonkeyPatch) -> None:
    config = FakeConfig("moto localstack")
    clean_environment.setenv("STEPWELL_BACKEND", "moto")
    assert deployed_backends_for(config) == ["moto"]  # type: ignore[arg-type]
    clean_environment.setenv("STEPWELL_DEPLOYED_BACKENDS", "localstack")
    assert deployed_backends_for(config) == ["localstack"]  # type: ignore[arg-type]
    with_option = FakeConfig("moto localstack", stepwell_deployed_backends="moto")
    assert deployed_backends_for(with_option) == ["moto"]  # type: ignore[arg-type]


def test_this_repositorys_deployed_tests_run_on_both_backends(request: pytest.FixtureRequest) -> None:
    assert request.config.getini("stepwell_deployed_backends") == "moto localstack"
