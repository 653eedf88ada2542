"""Every setting Teamlore reads is listed in .env.example."""

from __future__ import annotations

import re
from pathlib import Path

from teamlore.config import Settings

ROOT = Path(__file__).resolve().parent.parent


def test_every_setting_is_listed_in_env_example():
    listed = set(re.findall(r"^(TEAMLORE_[A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.MULTILINE))
    read = {f"TEAMLORE_{name.upper()}" for name in Settings.model_fields}
    assert sorted(read - listed) == []
