"""The CLI in a subprocess whose import system refuses every optional package (as a core install
lacks them), so tests hold in the full test environment, which has them all (tests/test_extras.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
    "pypdf",
    "docx",
    "openpyxl",
    "pptx",
    "defusedxml",
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
