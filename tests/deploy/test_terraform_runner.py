"""The Terraform runner's generated provider file and CLI config choice (no terraform run needed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from stepwell.testing import terraform
from stepwell.testing.backends import Backend
from stepwell.testing.terraform import ENDPOINT_SERVICES, TerraformStack, ensure_cli_config, provider_override


def test_the_provider_override_points_every_service_at_the_backend() -> None:
    text = provider_override(Backend("moto", "http://127.0.0.1:5123", region="eu-west-1"))
    for service in (
        "dynamodb",
        "sqs",
        "events",
        "scheduler",
        "s3",
        "lambda",
        "iam",
        "logs",
        "sts",
        "kms",
        "ec2",
        "ssm",
    ):
        assert service in ENDPOINT_SERVICES
        assert f'{service} = "http://127.0.0.1:5123"' in " ".join(text.split())
    for setting in (
        "skip_credentials_validation = true",
        "skip_requesting_account_id = true",
        "skip_metadata_api_check = true",
        "s3_use_path_style = true",
        'access_key = "test"',
        'region = "eu-west-1"',
    ):
        assert setting in " ".join(text.split())


@pytest.mark.parametrize(
    ("has_provider_block", "file_name"),
    [(True, "stepwell_local_backend_override.tf"), (False, "stepwell_local_backend.tf")],
)
def test_a_root_module_with_a_provider_block_gets_an_override_file(
    tmp_path: Path, has_provider_block: bool, file_name: str
) -> None:
    source = tmp_path / "source"
    (source / "stack").mkdir(parents=True)
    provider = 'provider "aws" {\n  region = "eu-west-1"\n}\n' if has_provider_block else ""
    (source / "stack" / "main.tf").write_text(provider + 'output "x" { value = 1 }\n')
    (source / ".terraform").mkdir()
    (source / "stack" / "terraform.tfstate").write_text("{}")
    stack = TerraformStack(
        Backend("moto", "http://127.0.0.1:5123"),
        module_dir="stack",
        work_root=tmp_path / "work",
        source_root=source,
    )
    written = sorted(path.name for path in stack.working_dir.glob("*.tf"))
    assert written == sorted(["main.tf", file_name])
    assert not (stack.copy_root / ".terraform").exists()
    assert not (stack.working_dir / "terraform.tfstate").exists()


def test_a_missing_root_module_is_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"no Terraform root module at .*nowhere"):
        TerraformStack(
            Backend("moto", "http://127.0.0.1:5123"),
            module_dir="nowhere",
            work_root=tmp_path / "w",
            source_root=tmp_path,
        )


def test_a_cli_config_that_does_not_exist_is_replaced_by_the_projects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", "/nonexistent/terraformrc")
    chosen = ensure_cli_config()
    assert chosen == str(terraform.REPO_ROOT / ".cache" / "terraformrc")
    assert Path(chosen).is_file()
