"""What the harness needs to run Terraform in a repository that is not this one: the CLI config written in
Python (the same file as tools/terraform_cli_config.sh), a missing terraform named, a copy that would
contain itself refused, local module sources outside the root copied, a root's own backend replaced."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from stepwell.testing import terraform_cli_config
from stepwell.testing.backends import Backend
from stepwell.testing.stack_sources import StackCopyError, copied_trees
from stepwell.testing.terraform import STATE_FILE_NAME, TerraformNotFound, TerraformStack

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "terraform_cli_config.sh"
BACKEND = Backend("moto", "http://127.0.0.1:5123")


@pytest.mark.parametrize("mirror", [None, "/srv/mirror"])
def test_the_cli_config_is_the_scripts_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mirror: str | None
) -> None:
    # The mirror TF_PROVIDER_MIRROR names, or the one both find on this machine (or none: an empty file).
    environment = {key: value for key, value in os.environ.items() if key != "TF_PROVIDER_MIRROR"}
    monkeypatch.delenv("TF_PROVIDER_MIRROR", raising=False)
    if mirror is not None:
        monkeypatch.setenv("TF_PROVIDER_MIRROR", mirror)
        environment["TF_PROVIDER_MIRROR"] = mirror
    written = terraform_cli_config.write_cli_config(tmp_path / "python" / "terraformrc")
    subprocess.run([str(SCRIPT), str(tmp_path / "script")], check=True, capture_output=True, env=environment)
    assert written.read_bytes() == (tmp_path / "script").read_bytes()
    if mirror is not None:
        assert f'path    = "{mirror}"' in written.read_text()


def test_without_a_mirror_the_cli_config_is_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TF_PROVIDER_MIRROR", raising=False)
    monkeypatch.setattr(terraform_cli_config, "mirror_candidates", lambda: [tmp_path / "none"])
    assert terraform_cli_config.write_cli_config(tmp_path / "terraformrc").read_text() == ""


def test_an_installed_package_writes_its_cli_config_to_the_users_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Installed: no tools/terraform_cli_config.sh beside the package, no TF_CLI_CONFIG_FILE file.
    monkeypatch.setattr(terraform_cli_config, "SOURCE_ROOT", tmp_path / "site-packages")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", str(tmp_path / "missing" / "terraformrc"))
    chosen = terraform_cli_config.ensure_cli_config()
    assert chosen == str(tmp_path / "cache" / "stepwell" / "terraformrc")
    assert Path(chosen).is_file()
    assert os.environ["TF_CLI_CONFIG_FILE"] == chosen


def _root_module(folder: Path, text: str = 'output "x" {\n  value = 1\n}\n') -> Path:
    folder.mkdir(parents=True)
    (folder / "main.tf").write_text(text)
    return folder


def test_a_work_folder_inside_the_copied_tree_is_refused_naming_both(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    _root_module(repo / "infra")
    work = repo / "build" / "stack"
    with pytest.raises(StackCopyError) as raised:
        TerraformStack(BACKEND, module_dir="infra", work_root=work, source_root=repo)
    message = str(raised.value)
    assert str(repo) in message
    assert str(work / "repo") in message
    assert "would contain itself" in message
    assert not (work / "repo").exists()


def test_a_work_folder_under_a_skipped_folder_of_the_tree_is_fine(tmp_path: Path) -> None:
    # `stepwell local up` works in PATH/.stepwell/, which no copy enters.
    repo = tmp_path / "repo"
    _root_module(repo / "infra")
    stack = TerraformStack(
        BACKEND, module_dir="infra", work_root=repo / "infra" / ".stepwell" / "work", source_root=repo
    )
    assert (stack.working_dir / "main.tf").is_file()
    assert not (stack.working_dir / ".stepwell").exists()


def test_a_local_module_outside_the_tree_is_copied_at_its_relative_place(tmp_path: Path) -> None:
    # infra/ calls ../../shared/stepwell (outside the repo), which calls ./modules/engine (inside itself).
    shared = tmp_path / "shared" / "stepwell"
    _root_module(shared, 'module "engine" {\n  source = "./modules/engine"\n}\n')
    _root_module(shared / "modules" / "engine")
    (shared / ".venv").mkdir()
    repo = tmp_path / "team" / "repo"
    _root_module(repo / "infra", 'module "workflows" {\n  source = "../../../shared/stepwell"\n}\n')
    (repo / "workflows").mkdir()
    assert copied_trees(repo, repo / "infra") == [shared.resolve(), repo.resolve()]
    stack = TerraformStack(BACKEND, module_dir="infra", work_root=tmp_path / "work", source_root=repo)
    called = (stack.working_dir / "../../../shared/stepwell").resolve()
    assert (called / "modules" / "engine" / "main.tf").is_file()
    assert not (called / ".venv").exists()
    assert (stack.working_dir.parent / "workflows").is_dir()
    assert stack.working_dir == (tmp_path / "work" / "repo" / "team" / "repo" / "infra").resolve()


@pytest.mark.parametrize(
    ("terraform_block", "overridden"),
    [
        ('terraform {\n  backend "s3" {\n    bucket = "real-state"\n  }\n}\n', True),
        ('terraform {\n  cloud {\n    organization = "acme"\n  }\n}\n', True),
        ('terraform {\n  required_version = ">= 1.9"\n}\n', False),
    ],
)
def test_a_root_with_its_own_backend_keeps_its_state_in_the_copy(
    tmp_path: Path, terraform_block: str, overridden: bool
) -> None:
    _root_module(tmp_path / "src" / "infra", terraform_block)
    stack = TerraformStack(
        BACKEND, module_dir="infra", work_root=tmp_path / "work", source_root=tmp_path / "src"
    )
    override = stack.working_dir / STATE_FILE_NAME
    assert override.exists() == overridden
    if overridden:
        assert 'backend "local" {}' in override.read_text()


def test_a_missing_terraform_is_named_with_where_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _root_module(tmp_path / "src" / "infra")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(TerraformNotFound, match=r"'terraform' is not on PATH.*install it \(https://"):
        TerraformStack(BACKEND, module_dir="infra", work_root=tmp_path / "work", source_root=tmp_path / "src")
