"""Every setting the code reads is documented, with a description, in .env.example, and nothing
else is."""

from __future__ import annotations

import re
from pathlib import Path

from teamlore.config import Settings

ROOT = Path(__file__).resolve().parents[1]


def documented_variables() -> set[str]:
    text = (ROOT / ".env.example").read_text()
    return set(re.findall(r"^(TEAMLORE_[A-Z0-9_]+)=", text, re.MULTILINE))


def variables_the_code_reads() -> set[str]:
    """Settings, and any TEAMLORE_* name the package spells out (read with os.environ)."""
    names = {f"TEAMLORE_{name.upper()}" for name in Settings.model_fields}
    for path in (ROOT / "teamlore").rglob("*.py"):
        names |= set(re.findall(r"[\"'](TEAMLORE_[A-Z0-9_]*[A-Z0-9])[\"']", path.read_text()))
    return names


def benchmark_variables() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "bench").rglob("*.py"):
        names |= set(re.findall(r"[\"'](TEAMLORE_TEST_[A-Z0-9_]+)[\"']", path.read_text()))
    return names


def test_every_variable_the_code_reads_is_in_env_example():
    missing = variables_the_code_reads() - documented_variables()
    assert not missing, f"add to .env.example: {sorted(missing)}"


def test_env_example_names_no_variable_nothing_reads():
    stale = documented_variables() - variables_the_code_reads() - benchmark_variables()
    assert not stale, f"documented but read by nothing: {sorted(stale)}"


def test_every_setting_has_a_description():
    assert [name for name, info in Settings.model_fields.items() if not info.description] == []
