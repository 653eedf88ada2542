"""The core install runs without the optional extras; a feature whose extra is missing says, in one
line, what to install.

The CLI runs in a subprocess whose import system refuses every optional package (as a core
install lacks them), so these tests hold in the full test environment, which has them all.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from teamlore.cli.connect import PLATFORMS
from teamlore.extras import MODULES

from .without_extras import teamlore

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(900)
def test_demo_and_search_run_without_any_extra(demo_run):
    # The demo embeds the whole sample: minutes on a loaded machine. One run for the session
    # (conftest.demo_run, without the extras); tests/test_cli.py asserts on its output too.
    demo, data_dir, cwd = demo_run
    assert demo.returncode == 0, demo.stderr
    assert "skipped 0" in demo.stdout
    search = teamlore(
        "search", "who owns billing", "-w", "T0ACME", "-c", "C01ENG", "--data-dir", str(data_dir), cwd=cwd
    )
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
    ("configured", "extra"),
    [
        # The server stack: MongoDB with Weaviate (refused without); MongoDB's stores open first.
        (
            {"TEAMLORE_MONGO_URL": "mongodb://127.0.0.1:9", "TEAMLORE_WEAVIATE_URL": "http://127.0.0.1:9"},
            "mongo",
        ),
        ({"TEAMLORE_WEAVIATE_URL": "http://127.0.0.1:9"}, "weaviate"),
        ({"TEAMLORE_LLM_BASE_URL": "http://127.0.0.1:9/v1"}, "llm"),
    ],
)
def test_a_configured_server_store_or_model_without_its_extra_names_it(tmp_path, configured, extra):
    done = teamlore("channels", "-w", "T0ACME", cwd=tmp_path, **configured)
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
