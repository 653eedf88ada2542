"""Every setting the code reads is documented, with a description, in .env.example."""

from __future__ import annotations

import re
from pathlib import Path

from teamlore.config import Settings

ENV_EXAMPLE = Path(__file__).resolve().parents[1] / ".env.example"


def test_every_setting_is_in_env_example_and_nothing_else_is():
    documented = set(re.findall(r"^(TEAMLORE_[A-Z0-9_]+)=", ENV_EXAMPLE.read_text(), re.MULTILINE))
    read = {f"TEAMLORE_{name.upper()}" for name in Settings.model_fields}
    assert read - documented == set(), "add these to .env.example"
    assert documented - read == set(), "these are documented but no setting reads them"


def test_every_weaviate_setting_has_a_description():
    for name, info in Settings.model_fields.items():
        if name.startswith("weaviate_"):
            assert info.description, name
