"""The model client over real HTTP: roles and models, retries honouring Retry-After, timeouts,
rate limits, and the spend ledger that `teamlore status` shows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from teamlore.config import Settings
from teamlore.errors import ModelUnavailable
from teamlore.llm.client import ModelClient, Role
from teamlore.llm.ratelimit import RateLimiter
from teamlore.retry_after import retry_after
from teamlore.stores.embedded import EmbeddedStores
from teamlore.stores.protocols import SpendRow

from .llm_server import Reply

CHAT = [{"role": "system", "content": "Reply in JSON."}, {"role": "user", "content": "hi"}]


@pytest.fixture
def stores(tmp_path):
    opened = EmbeddedStores(tmp_path / "s.sqlite3")
    yield opened
    opened.close()


def client(model, stores, **settings) -> ModelClient:
    base = {"llm_base_url": model.url, "llm_api_key": "sk-test", "llm_backoff_s": 0.01, "llm_timeout_s": 2.0}
    return ModelClient(Settings(_env_file=None, **{**base, **settings}), stores.spend)


def spend(stores) -> dict[str, SpendRow]:
    return {row.role: row for row in stores.spend.totals()}


def test_each_role_uses_its_model_and_every_call_is_in_the_ledger(model, stores):
    llm = client(model, stores, llm_model="small", llm_model_judge="careful")
    model.then(Reply(content='{"ok": 1}', usage=(120, 40)), Reply(content='{"ok": 2}', usage=(300, 7)))
    assert llm.complete(Role.EXTRACT, CHAT).text == '{"ok": 1}'
    assert llm.complete(Role.JUDGE, CHAT).text == '{"ok": 2}'
    first, second = model.chats()
    assert first.path == "/v1/chat/completions" and first.headers["authorization"] == "Bearer sk-test"
    assert (first.body["model"], second.body["model"]) == ("small", "careful")
    assert first.body["response_format"] == {"type": "json_object"} and first.body["messages"] == CHAT
    rows = spend(stores)
    assert (rows["extract"].model, rows["extract"].calls, rows["extract"].prompt_tokens) == ("small", 1, 120)
    assert (rows["judge"].model, rows["judge"].prompt_tokens, rows["judge"].completion_tokens) == (
        "careful",
        300,
        7,
    )


def test_a_429_waits_as_long_as_retry_after_says_then_succeeds(model, stores):
    llm = client(model, stores, llm_backoff_s=0.01)
    model.then(Reply(status=429, headers={"Retry-After": "1"}), {"ok": True})
    started = time.monotonic()
    assert llm.complete(Role.WRITE, CHAT).text == '{"ok": true}'
    first, second = model.chats()
    # Our own backoff would have waited 10 ms: the second request came when the server asked.
    assert second.at - first.at >= 0.95 and time.monotonic() - started >= 0.95
    assert (spend(stores)["write"].failures, spend(stores)["write"].calls) == (1, 1)


def test_a_retry_after_longer_than_allowed_fails_at_once(model, stores):
    llm = client(model, stores, llm_backoff_max_s=1.0)
    model.then(Reply(status=429, headers={"Retry-After": "120"}))
    started = time.monotonic()
    with pytest.raises(ModelUnavailable, match="answered 429"):
        llm.complete(Role.EXTRACT, CHAT)
    assert len(model.chats()) == 1 and time.monotonic() - started < 1.0


def test_a_timeout_is_retried_then_reported(model, stores):
    llm = client(model, stores, llm_timeout_s=0.3, llm_max_retries=1)
    model.then(Reply(content="{}", delay_s=3), Reply(content="{}", delay_s=3))
    with pytest.raises(ModelUnavailable, match="timed out"):
        llm.complete(Role.ANSWER, CHAT)
    assert len(model.chats()) == 2 and spend(stores)["answer"].failures == 2


def test_a_server_error_is_retried_and_a_refusal_is_not(model, stores):
    llm = client(model, stores, llm_max_retries=3)
    model.then(Reply(status=503), Reply(status=502), {"ok": 1})
    assert llm.complete(Role.EXTRACT, CHAT).text == '{"ok": 1}'
    assert len(model.chats()) == 3
    model.then(Reply(status=400))
    with pytest.raises(ModelUnavailable, match="answered 400"):
        llm.complete(Role.EXTRACT, CHAT)
    assert len(model.chats()) == 4  # a bad request is not asked again


def test_an_unreachable_endpoint_is_model_unavailable(stores):
    settings = Settings(_env_file=None, llm_base_url="http://127.0.0.1:9/v1", llm_max_retries=0)
    with pytest.raises(ModelUnavailable, match="unreachable"):
        ModelClient(settings, stores.spend).complete(Role.EXTRACT, CHAT)


def test_retry_after_reads_seconds_milliseconds_and_http_dates():
    assert retry_after({"retry-after": "3"}) == 3.0
    assert retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # in the past
    assert retry_after({}) is None and retry_after({"retry-after": "soon"}) is None


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_the_request_limit_holds_a_request_until_the_window_has_room():
    t = FakeTime()
    limiter = RateLimiter(2, 0, t.clock, t.sleep)
    limiter.acquire(10)
    t.now = 5
    limiter.acquire(10)
    assert t.slept == []
    limiter.acquire(10)  # third in the minute: waits until the first leaves the window
    assert t.slept == [55] and t.now == 60


def test_the_token_limit_counts_reported_usage_not_the_estimate():
    t = FakeTime()
    limiter = RateLimiter(0, 1000, t.clock, t.sleep)
    first = limiter.acquire(900)
    limiter.settle(first, 100)  # the endpoint said 100 were used
    limiter.acquire(800)  # fits: 100 + 800
    assert t.slept == []
    limiter.acquire(200)  # 1,100 would not fit: wait for the first to leave the window
    assert t.slept == [60]
    # A request larger than the whole budget still goes, alone in its window (no hang).
    t.now += 61
    limiter.acquire(5000)
    assert t.slept == [60]


def test_status_shows_the_spend_ledger_without_redis(tmp_path):
    stores = EmbeddedStores(tmp_path / "teamlore.sqlite3")
    stores.spend.record(
        SpendRow("extract", "small", calls=3, fallbacks=1, prompt_tokens=900, completion_tokens=60)
    )
    stores.spend.record(SpendRow("extract", "small", calls=1, prompt_tokens=100, completion_tokens=40))
    stores.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEAMLORE_")}
    env["TEAMLORE_DATA_DIR"] = str(tmp_path)
    run = [sys.executable, "-m", "teamlore.cli", "status"]
    done = subprocess.run([*run, "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert status["model"]["endpoint"] is None and "queues" not in status
    [row] = status["model"]["spend"]
    assert (row["role"], row["calls"], row["fallbacks"], row["prompt_tokens"], row["completion_tokens"]) == (
        "extract",
        4,
        1,
        1000,
        100,
    )
    text = subprocess.run(run, env=env, capture_output=True, text=True, timeout=120).stdout
    assert "extract, small: 4 calls, 0 failed, 1 fallbacks" in text and "1,000 / 100 tokens" in text


def test_doctor_checks_the_model_endpoint_serves_the_configured_models(model, tmp_path):
    from teamlore.doctor import check_model

    assert check_model(Settings(_env_file=None)).ok  # no model configured: nothing to check
    settings = Settings(_env_file=None, llm_base_url=model.url, llm_model_judge="careful")
    model.models = ["gpt-4o-mini", "careful"]
    found = check_model(settings)
    assert found.ok and "careful, gpt-4o-mini" in found.detail
    model.models = ["gpt-4o-mini"]
    missing = check_model(settings)
    assert (
        not missing.ok and "does not serve careful" in missing.detail and "TEAMLORE_LLM_MODEL" in missing.fix
    )
    down = check_model(Settings(_env_file=None, llm_base_url="http://127.0.0.1:9/v1"))
    assert not down.ok and "TEAMLORE_LLM_BASE_URL" in down.fix
    assert [r for r in model.requests if r.path.endswith("/chat/completions")] == []  # no tokens spent


def test_without_a_base_url_nothing_uses_a_model_or_imports_the_client(tmp_path):
    script = (
        "import sys\n"
        "from teamlore.app import Teamlore\n"
        "from teamlore.config import Settings\n"
        f"lore = Teamlore(Settings(data_dir={str(tmp_path)!r}, _env_file=None))\n"
        "print(lore.llm, type(lore.pipeline.extractor).__name__, type(lore.wiki.writer).__name__,\n"
        "      lore.composer, lore.pipeline.judge, 'openai' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEAMLORE_")}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None", "OfflineExtractor", "TemplateWriter", "None", "None", "False"]
