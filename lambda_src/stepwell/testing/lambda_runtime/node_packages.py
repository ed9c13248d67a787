"""Which npm packages a Node.js function's zip carries: the production ones of a package-lock.json, as
`npm ci --omit=dev` installs them (a compiler or a test tool, dev dependencies, stays out of the zip)."""

from __future__ import annotations

import json
from pathlib import Path


class PackagesNotInstalled(RuntimeError):
    """A package the lock names is not in node_modules: `npm ci` has not run (here: `make node`)."""


def production_packages(node_modules: Path) -> list[Path]:
    """The top-level package folders of `node_modules` that are not dev dependencies, per the lock beside it
    (a nested node_modules goes with the package holding it), sorted."""
    lock = json.loads((node_modules.parent / "package-lock.json").read_text(encoding="utf-8"))
    folders = []
    for key, entry in lock.get("packages", {}).items():
        nested = "/node_modules/" in key[len("node_modules/") :]
        if not key.startswith("node_modules/") or entry.get("dev") or nested:
            continue
        folder = node_modules.parent / key
        if not folder.is_dir():
            raise PackagesNotInstalled(f"{folder} is in the lock but not installed: run npm ci (`make node`)")
        folders.append(folder)
    return sorted(folders)


def package_files(node_modules: Path) -> dict[str, bytes]:
    """The files of the production packages by their path in a zip (`node_modules/...`), symlinks left out."""
    files: dict[str, bytes] = {}
    for package in production_packages(node_modules):
        for path in sorted(package.rglob("*")):
            if path.is_file() and not path.is_symlink():
                files[f"node_modules/{path.relative_to(node_modules).as_posix()}"] = path.read_bytes()
    return files
