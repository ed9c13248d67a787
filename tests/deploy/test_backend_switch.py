"""The backend switch: which backends deployed tests run on, and what a backend tells its children."""

from __future__ import annotations

import pytest
from stepwell.testing.backends import Backend, deployed_backend_names, selected_backend_name


def test_deployed_backends_default_to_moto_then_localstack() -> None:
    assert deployed_backend_names("moto localstack") == ["moto", "localstack"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("localstack", ["localstack"]),
        ("moto,localstack", ["moto", "localstack"]),
        (" LocalStack ,  moto ", ["localstack", "moto"]),
        ("moto moto", ["moto"]),
    ],
)
def test_deployed_backend_lists_accept_spaces_commas_and_case(raw: str, expected: list[str]) -> None:
    assert deployed_backend_names(raw) == expected


def test_an_unknown_backend_is_named_with_the_allowed_values() -> None:
    with pytest.raises(
        ValueError, match=r"unknown Stepwell backend 'docker': allowed values are moto, localstack"
    ):
        deployed_backend_names("moto docker")


def test_an_empty_backend_list_is_rejected() -> None:
    with pytest.raises(ValueError, match="names no backend"):
        deployed_backend_names(" , ")


def test_single_backend_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STEPWELL_BACKEND", raising=False)
    assert selected_backend_name() == "moto"
    monkeypatch.setenv("STEPWELL_BACKEND", "localstack")
    assert selected_backend_name() == "localstack"
    assert selected_backend_name("moto") == "moto"  # the pytest option wins over the environment
    with pytest.raises(ValueError, match="allowed values are memory, moto, localstack"):
        selected_backend_name("kinesis")


def test_a_backend_points_child_processes_at_itself() -> None:
    backend = Backend("moto", "http://127.0.0.1:5999", region="eu-west-1")
    environment = backend.environment()
    assert environment["AWS_ENDPOINT_URL"] == "http://127.0.0.1:5999"
    assert environment["AWS_DEFAULT_REGION"] == environment["AWS_REGION"] == "eu-west-1"
    assert environment["AWS_ACCESS_KEY_ID"] == "test"
    assert not backend.runs_lambda_code
    assert Backend("localstack", "http://127.0.0.1:4566").runs_lambda_code
    client = Backend("localstack", "http://127.0.0.1:4566", region="eu-west-1").client("sqs")
    assert client.meta.endpoint_url == "http://127.0.0.1:4566"
    assert client.meta.region_name == "eu-west-1"
