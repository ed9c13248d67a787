"""The units pytest-xdist hands to workers (tests/conftest.py `_xdist_unit`): this suite's deployed tests
of one backend share one apply, an example's deployed tests apply the example's own root, every other test
goes with its module."""

from __future__ import annotations

from tests.conftest import _xdist_unit


def test_deployed_tests_of_a_backend_are_one_unit_across_modules() -> None:
    assert _xdist_unit("tests/deploy/test_smoke.py::test_start[moto]") == "deployed-moto"
    assert _xdist_unit("tests/deploy/test_conformance_deployed.py::test_case[step/1-1-localstack]") == (
        "deployed-localstack"
    )


def test_an_examples_deployed_tests_are_a_unit_of_their_own() -> None:
    unit = _xdist_unit("examples/testing/tests/test_shop_order_deployed.py::test_ships[moto]")
    assert unit == "examples/testing/tests-deployed-moto"
    assert unit != _xdist_unit("tests/deploy/test_smoke.py::test_start[moto]")


def test_other_tests_go_with_their_module() -> None:
    assert _xdist_unit("tests/engine/test_engine.py::test_x") == "tests/engine/test_engine.py"
    module = "tests/definitions/test_nodes.py"
    assert _xdist_unit(f"{module}::test_y[motorcycle]") == module
