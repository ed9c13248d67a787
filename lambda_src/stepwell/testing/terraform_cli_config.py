"""The Terraform CLI config the harness runs Terraform with, written in Python so an installed package
needs no clone of this repository (tools/terraform_cli_config.sh writes the same file for the Makefile).

An on-disk provider mirror of hashicorp/aws (``TF_PROVIDER_MIRROR``, else the first of the usual
places that holds one) is used for that provider, the registry for every other; without a mirror the
file is empty and Terraform uses the registry. Where the file goes: ``TF_CLI_CONFIG_FILE`` when it
names an existing file (kept as it is), else ``.cache/terraformrc`` in a clone of this repository
(what ``make`` writes), else ``$XDG_CACHE_HOME/stepwell/terraformrc`` (``~/.cache/stepwell/``).
"""

from __future__ import annotations

import os
from pathlib import Path

CLI_CONFIG_ENV = "TF_CLI_CONFIG_FILE"
MIRROR_ENV = "TF_PROVIDER_MIRROR"
AWS_PROVIDER = "registry.terraform.io/hashicorp/aws"
# A clone of this repository: the package sits in <root>/lambda_src/stepwell.
SOURCE_ROOT = Path(__file__).resolve().parents[3]


def mirror_candidates() -> list[Path]:
    return [
        Path("/opt/tf-plugins"),
        Path("/usr/share/terraform/plugins"),
        Path.home() / ".terraform.d/plugins",
    ]


def provider_mirror() -> str | None:
    """The mirror holding hashicorp/aws: ``TF_PROVIDER_MIRROR``, else the first candidate that has it."""
    configured = os.environ.get(MIRROR_ENV, "")
    if configured:
        return configured
    for candidate in mirror_candidates():
        if (candidate / AWS_PROVIDER).is_dir():
            return str(candidate)
    return None


def cli_config_text(mirror: str | None) -> str:
    """The CLI config's text (tools/terraform_cli_config.sh writes the same, byte for byte)."""
    if mirror is None:
        return ""
    return f"""provider_installation {{
  filesystem_mirror {{
    path    = "{mirror}"
    include = ["{AWS_PROVIDER}"]
  }}
  direct {{
    exclude = ["{AWS_PROVIDER}"]
  }}
}}
"""


def in_source_checkout() -> bool:
    """True when this package runs from a clone of this repository (an editable install)."""
    return (SOURCE_ROOT / "tools" / "terraform_cli_config.sh").is_file()


def default_cli_config_path() -> Path:
    if in_source_checkout():
        return SOURCE_ROOT / ".cache" / "terraformrc"
    cache_home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache_home) / "stepwell" / "terraformrc"


def write_cli_config(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(cli_config_text(provider_mirror()))
    return path


def ensure_cli_config() -> str:
    """Point TF_CLI_CONFIG_FILE at a CLI config (writing it if missing) unless it already names an
    existing file (a CLI config that does not exist would send init to the registry)."""
    configured = os.environ.get(CLI_CONFIG_ENV)
    if configured and Path(configured).is_file():
        return configured
    config = default_cli_config_path()
    if not config.exists():
        write_cli_config(config)
    os.environ[CLI_CONFIG_ENV] = str(config)
    return str(config)
