"""The circuit breaker per model role, against the scripted model server over real HTTP: a dead
endpoint costs a few requests per role, not every call's retries; after the cool-down one trial
call decides; `teamlore status` shows each role's state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from teamlore.config import Settings
from teamlore.errors import ModelUnavailable
from teamlore.llm.breaker import CircuitBreaker
from teamlore.llm.client import ModelClient, Role
from teamlore.stores.embedded import EmbeddedStores

from .conftest import SAMPLE
from .llm_server import Reply

CHAT = [{"role": "system", "content": "Reply in JSON."}, {"role": "user", "content": "hi"}]


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "teamlore.cli", *args], env=env, capture_output=True, text=True, timeout=240
    )


def _fourteen_messages(folder: Path) -> Path:
    lines = [line for line in SAMPLE.read_text().splitlines() if '"message.created"' in line][:14]
    path = folder / "fourteen.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_import_against_a_model_that_always_times_out_falls_back_after_a_few_requests(model, tmp_path):
    """TEAMLORE_LLM_TIMEOUT_S=2 and 3 retries: without a breaker every call of every role waits out
    4 timeouts (about 23 calls, 3 minutes for these 14 messages); with one, each role sends
    TEAMLORE_LLM_BREAKER_FAILURES requests and then falls back at once."""
    model.default = lambda request: Reply(content="{}", delay_s=30)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEAMLORE_")}
    env |= {
        "TEAMLORE_DATA_DIR": str(tmp_path / "data"),
        "TEAMLORE_LLM_BASE_URL": model.url,
        "TEAMLORE_LLM_TIMEOUT_S": "2",
        "TEAMLORE_LLM_MAX_RETRIES": "3",
        "TEAMLORE_LLM_BACKOFF_S": "0.01",
        "TEAMLORE_LLM_BREAKER_FAILURES": "2",
    }
    done = _cli("import", str(_fourteen_messages(tmp_path)), env=env)
    assert done.returncode == 0, done.stderr
    assert "model extractor failed for 14 message(s)" in done.stdout + done.stderr
    per_role = Counter(request.role for request in model.chats())
    assert per_role and all(n == 2 for n in per_role.values()), per_role
    assert per_role["extract"] == 2  # one call's first two tries; every later call fell back at once

    status = _cli("status", "--json", env=env)
    assert status.returncode == 0, status.stderr
    breakers = {b["role"]: b for b in json.loads(status.stdout)["model"]["breakers"]}
    assert set(breakers) == {"extract", "judge", "write", "answer"}
    for role, breaker in breakers.items():
        tripped = role in per_role
        assert breaker["state"] == ("open" if tripped else "closed"), breaker
        assert (breaker["failures"] == 2) if tripped else (breaker["retry_at"] is None)
    text = _cli("status", env=env).stdout
    assert "extract OPEN (2 failed requests in a row" in text and "answer closed" in text


class Ticking:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def stores(tmp_path):
    opened = EmbeddedStores(tmp_path / "s.sqlite3")
    yield opened
    opened.close()


def test_after_the_cool_down_one_trial_call_decides(model, stores):
    clock = Ticking()
    settings = Settings(
        _env_file=None,
        llm_base_url=model.url,
        llm_max_retries=3,
        llm_backoff_s=0.01,
        llm_breaker_failures=2,
        llm_breaker_cooldown_s=60,
    )
    llm = ModelClient(settings, stores.spend, clock=clock)
    model.then(Reply(status=500), Reply(status=500))
    with pytest.raises(ModelUnavailable, match="answered 500"):
        llm.complete(Role.EXTRACT, CHAT)  # two tries, then the open circuit ends the retries
    assert len(model.chats()) == 2
    with pytest.raises(ModelUnavailable, match="circuit breaker"):
        llm.complete(Role.EXTRACT, CHAT)
    assert len(model.chats()) == 2  # refused without a request
    # Control: another role's circuit is its own.
    model.then(Reply(content='{"ok": 1}'))
    assert llm.complete(Role.JUDGE, CHAT).text == '{"ok": 1}'

    clock.now += 61  # cool-down over: the next call is the one trial; it fails, so open again
    model.then(Reply(status=503))
    with pytest.raises(ModelUnavailable, match="answered 503"):
        llm.complete(Role.EXTRACT, CHAT)
    with pytest.raises(ModelUnavailable, match="circuit breaker"):
        llm.complete(Role.EXTRACT, CHAT)
    assert len(model.chats()) == 4

    clock.now += 61  # a trial that is answered closes the circuit
    model.then(Reply(content='{"ok": 2}'), Reply(content='{"ok": 3}'))
    assert llm.complete(Role.EXTRACT, CHAT).text == '{"ok": 2}'
    assert llm.complete(Role.EXTRACT, CHAT).text == '{"ok": 3}'
    assert len(model.chats()) == 6  # 2 + the judge's 1 + the failed trial + 2
    [row] = [b for b in stores.spend.breakers() if b.role == "extract"]
    assert (row.state, row.failures, row.retry_at) == ("closed", 0, None)


def test_while_the_trial_runs_other_calls_are_refused_and_a_429_counts_neither_way():
    clock = Ticking()
    breaker = CircuitBreaker("write", threshold=1, cooldown_s=10, clock=clock)
    breaker.failed()
    assert breaker.is_open
    clock.now += 10
    breaker.admit()  # the trial
    with pytest.raises(ModelUnavailable):
        breaker.admit()  # a second caller meanwhile
    clock.now += 10
    breaker.admit()  # a trial whose caller vanished is replaced after a cool-down
    breaker.succeeded()
    breaker.admit()
    assert breaker.state == "closed"


def test_a_429_does_not_trip_the_breaker(model, stores):
    settings = Settings(
        _env_file=None, llm_base_url=model.url, llm_max_retries=3, llm_backoff_s=0.01, llm_breaker_failures=2
    )
    llm = ModelClient(settings, stores.spend)
    model.then(*(Reply(status=429, headers={"Retry-After": "0"}) for _ in range(3)), Reply(content="{}"))
    assert llm.complete(Role.WRITE, CHAT).text == "{}"
    assert llm.breakers[Role.WRITE].state == "closed" and len(model.chats()) == 4
