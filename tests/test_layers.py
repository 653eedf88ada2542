"""The import contracts in pyproject.toml (run by `lint-imports` in CI) catch a layer breach."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import teamlore

REPO = Path(__file__).resolve().parents[1]
PACKAGE = Path(teamlore.__file__).parent
LINT_IMPORTS = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or "lint-imports"


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(PACKAGE, tmp_path / "teamlore", ignore=shutil.ignore_patterns("__pycache__", "*.npz"))
    return tmp_path / "teamlore"


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    """The repository's contracts, checked against the package copied under ``root``."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    command = [LINT_IMPORTS, str(REPO / "pyproject.toml"), "--no-cache"]
    return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=120)


def test_a_copy_of_the_package_keeps_every_contract(tmp_path):
    _copy(tmp_path)

    result = _lint(tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_a_cli_module_importing_a_store_breaks_the_surfaces_contract(tmp_path):
    asking = _copy(tmp_path) / "cli" / "asking.py"
    asking.write_text(asking.read_text() + "\nimport teamlore.stores.embedded  # noqa: E402\n")

    result = _lint(tmp_path)

    assert result.returncode != 0
    assert "surfaces call capabilities and the app, never a store or the workers BROKEN" in result.stdout
    assert "teamlore.cli.asking -> teamlore.stores.embedded" in result.stdout


def test_the_surfaces_contract_forbids_every_store_module_but_the_protocols():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    surfaces = next(c for c in config["contracts"] if c["id"] == "surfaces")
    stores = {
        f"teamlore.stores.{p.stem}"
        for p in (PACKAGE / "stores").iterdir()
        if p.name != "__pycache__" and not p.name.startswith("__init__")
    }

    assert stores - {"teamlore.stores.protocols"} <= set(surfaces["forbidden_modules"])
