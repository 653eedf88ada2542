"""The core install runs without the optional extras; a feature whose extra is missing says, in one
line, what to install.

The CLI runs in a subprocess whose import system refuses every optional package (as a core
install lacks them), so these tests hold in the full test environment, which has them all.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from teamlore.cli.connect import PLATFORMS
from teamlore.extras import MODULES

ROOT = Path(__file__).resolve().parents[1]
OPTIONAL = (
    "slack_bolt",
    "slack_sdk",
    "discord",
    "microsoft_agents",
    "mattermostautodriver",
    "weaviate",
    "pymongo",
    "bson",
    "motor",
    "openai",
)
# The CLI's main, with a finder ahead of every other that refuses the optional packages.
WITHOUT_EXTRAS = f"""
import sys

class RefuseOptional:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {OPTIONAL!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (refused by the test)", name=name)
        return None

sys.meta_path.insert(0, RefuseOptional())
from teamlore.cli import main
main(sys.argv[1:])
"""


def teamlore(
    *args: str, cwd: Path, extras: bool = False, timeout: float = 120, **env: str
) -> subprocess.CompletedProcess:
    """The CLI with a clean TEAMLORE_* environment; without the extras unless ``extras``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TEAMLORE_")}
    command = ["-m", "teamlore"] if extras else ["-c", WITHOUT_EXTRAS]
    return subprocess.run(
        [sys.executable, *command, *args],
        capture_output=True,
        text=True,
        env={**clean, "TEAMLORE_DATA_DIR": str(cwd / "data"), **env},
        cwd=cwd,
        timeout=timeout,
    )


@pytest.mark.timeout(900)
def test_demo_and_search_run_without_any_extra(tmp_path):
    # The demo embeds the whole sample: minutes on a loaded machine.
    demo = teamlore("demo", "--data-dir", str(tmp_path / "demo"), cwd=tmp_path, timeout=600)
    assert demo.returncode == 0, demo.stderr
    assert "skipped 0" in demo.stdout
    search = teamlore(
        "search", "who owns billing", "-w", "T0ACME", "-c", "C01ENG", "--data-dir", str(tmp_path / "demo"),
        cwd=tmp_path,
    )  # fmt: skip
    assert search.returncode == 0, search.stderr
    assert "result(s) by hybrid" in search.stdout


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_connect_without_the_platforms_extra_names_it_in_one_line(tmp_path, platform):
    done = teamlore("connect", platform, cwd=tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == f"error: {platform} support is not installed: pip install 'teamlore[{platform}]'\n"


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_connect_with_the_extra_gets_past_the_import(tmp_path, platform):
    done = teamlore("connect", platform, cwd=tmp_path, extras=True)
    assert done.returncode == 1
    assert done.stderr.startswith("error: set TEAMLORE_") and "pip install" not in done.stderr


@pytest.mark.parametrize(
    ("variable", "value", "extra"),
    [
        ("TEAMLORE_MONGO_URL", "mongodb://127.0.0.1:9", "mongo"),
        ("TEAMLORE_WEAVIATE_URL", "http://127.0.0.1:9", "weaviate"),
        ("TEAMLORE_LLM_BASE_URL", "http://127.0.0.1:9/v1", "llm"),
    ],
)
def test_a_configured_server_store_or_model_without_its_extra_names_it(tmp_path, variable, value, extra):
    done = teamlore("channels", "-w", "T0ACME", cwd=tmp_path, **{variable: value})
    assert done.returncode == 1
    assert done.stderr == f"error: {extra} support is not installed: pip install 'teamlore[{extra}]'\n"


def test_pyproject_extras_are_the_ones_the_code_requires():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert set(MODULES) <= set(extras)
    assert extras["all"] == [f"teamlore[{','.join(MODULES)}]"]
    assert "teamlore[all]" in extras["test"]
    optional = {req for name in MODULES for req in extras[name]}
    assert not optional & set(project["dependencies"])
    assert set(PLATFORMS) <= set(MODULES)


def test_the_image_installs_every_extra():
    assert '"$(ls /dist/*.whl)[all]"' in (ROOT / "Dockerfile").read_text()
