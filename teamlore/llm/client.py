"""One client for any OpenAI-compatible chat endpoint, shared by every model role.

It owns what every call needs and no caller should repeat: the model for the role, the timeout,
retries with backoff that honour ``Retry-After``, the endpoint's rate limits, a circuit breaker
per role (``breaker``) and the spend ledger. Vendor errors become ``ModelUnavailable`` here;
nothing above sees an ``openai`` type.
"""

from __future__ import annotations

import base64
import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar, cast

import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam

from teamlore.config import Settings
from teamlore.errors import ModelOutputInvalid, ModelUnavailable
from teamlore.llm.breaker import CircuitBreaker
from teamlore.llm.ratelimit import RateLimiter
from teamlore.retry_after import retry_after
from teamlore.stores.protocols import BreakerRow, SpendLedger, SpendRow

log = logging.getLogger(__name__)
# Statuses worth asking again: timeout, conflict, too many requests, the server's own trouble.
RETRYABLE = frozenset({408, 409, 429, 500, 502, 503, 504})
# The endpoint pacing us: neither a failure nor a success for the circuit breaker.
PACING = 429
CHARS_PER_TOKEN = 4  # the rate limiter's estimate before the endpoint reports usage
IMAGE_TOKENS = 1500  # the rate limiter's estimate of one image
# Reading shared images and audio (docs/files.md): roles of their own in the ledger and breakers.
VISION, TRANSCRIBE = "vision", "transcribe"
T = TypeVar("T")


class Role(StrEnum):
    EXTRACT = "extract"
    JUDGE = "judge"
    WRITE = "write"
    ANSWER = "answer"


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int


class ModelClient:
    """Chat completions through the ``openai`` package against ``TEAMLORE_LLM_BASE_URL``."""

    def __init__(
        self,
        settings: Settings,
        ledger: SpendLedger,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.base_url = settings.llm_base_url.rstrip("/")
        self._openai = openai.OpenAI(
            base_url=self.base_url,
            # Local servers (Ollama, vLLM) take any key; the package insists on one.
            api_key=settings.llm_api_key or "unused",
            timeout=settings.llm_timeout_s,
            max_retries=0,  # retries are ours: counted in the ledger, honouring Retry-After
        )
        self._models = {
            role: getattr(settings, f"llm_model_{role.value}") or settings.llm_model for role in Role
        }
        self.ledger = ledger
        self._retries = settings.llm_max_retries
        self._backoff, self._backoff_max = settings.llm_backoff_s, settings.llm_backoff_max_s
        self._max_output = settings.llm_max_output_tokens
        self._sleep = sleep
        self.limiter = RateLimiter(
            settings.llm_requests_per_minute, settings.llm_tokens_per_minute, sleep=sleep
        )
        self.breakers = {
            role: CircuitBreaker(
                role.value,
                settings.llm_breaker_failures,
                settings.llm_breaker_cooldown_s,
                publish=self._published,
                clock=clock,
            )
            for role in Role
        }
        self.media_breakers = {
            name: CircuitBreaker(
                name,
                settings.llm_breaker_failures,
                settings.llm_breaker_cooldown_s,
                publish=self._published,
                clock=clock,
            )
            for name in (VISION, TRANSCRIBE)
        }

    def _published(self, status: BreakerRow) -> None:
        self.ledger.set_breaker(status)

    def model_for(self, role: Role) -> str:
        return self._models[role]

    def note(self, role: Role, **counts: int) -> None:
        """Count something a caller did with the role's output (a fallback, a rejection, a hit)."""
        self.ledger.record(SpendRow(role.value, self.model_for(role), **counts))

    def complete(self, role: Role, messages: Sequence[Mapping[str, str]]) -> Completion:
        """One JSON-mode chat completion; retried on timeouts, 429 and 5xx, then ModelUnavailable."""
        model = self.model_for(role)
        estimate = sum(len(m["content"]) for m in messages) // CHARS_PER_TOKEN + self._max_output

        def send() -> ChatCompletion:
            return self._openai.chat.completions.create(
                model=model,
                # The system and user turns of ``prompts``, as the endpoint takes them.
                messages=cast(list[ChatCompletionMessageParam], [dict(m) for m in messages]),
                temperature=0,
                max_tokens=self._max_output,
                response_format={"type": "json_object"},
            )

        response, handle = self._send(role.value, model, self.breakers[role], estimate, send)
        return self._completion(role, model, response, handle, estimate)

    def read_image(
        self, model: str, data: bytes, mime: str, system: str, instruction: str
    ) -> tuple[str, bool]:
        """The text a vision model gives for one image (a chat completion whose user turn carries
        the image as a data URI); the same retries, rate limit, spend ledger and a breaker of its
        own (``vision``), and whether the answer was cut at TEAMLORE_LLM_MAX_OUTPUT_TOKENS (what
        came is kept). ModelUnavailable or ModelOutputInvalid when there is no usable answer."""
        uri = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
        turns: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": system},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": instruction},
                    {"type": "image_url", "image_url": {"url": uri}},
                ],
            },
        ]
        # An image costs the endpoint a few hundred to a few thousand tokens, whatever its bytes.
        estimate = (len(system) + len(instruction)) // CHARS_PER_TOKEN + IMAGE_TOKENS + self._max_output

        def send() -> ChatCompletion:
            return self._openai.chat.completions.create(
                model=model, messages=turns, temperature=0, max_tokens=self._max_output
            )

        response, handle = self._send(VISION, model, self.media_breakers[VISION], estimate, send)
        text, finish, _, _ = self._settled(VISION, model, response, handle, estimate)
        return text, finish == "length"

    def transcribe(self, model: str, data: bytes, name: str, mime: str) -> str:
        """The text a transcription model hears in one audio file (``/audio/transcriptions``,
        multipart); the same retries, rate limit and spend ledger, a breaker of its own."""

        def send() -> Any:
            return self._openai.audio.transcriptions.create(model=model, file=(name, data, mime or None))

        response, handle = self._send(
            TRANSCRIBE, model, self.media_breakers[TRANSCRIBE], self._max_output, send
        )
        text = getattr(response, "text", None)
        if not isinstance(text, str):
            self.ledger.record(SpendRow(TRANSCRIBE, model, failures=1))
            raise ModelOutputInvalid("the endpoint sent something that is not a transcription")
        self.limiter.settle(handle, len(text) // CHARS_PER_TOKEN)
        self.ledger.record(
            SpendRow(TRANSCRIBE, model, calls=1, completion_tokens=len(text) // CHARS_PER_TOKEN)
        )
        return text

    def _send(
        self, role: str, model: str, breaker: CircuitBreaker, estimate: int, send: Callable[[], T]
    ) -> tuple[T, list[float]]:
        """``send`` under the breaker and the rate limit, retried on timeouts, 429 and 5xx; the
        answer and the rate limiter's handle (the caller settles it), else ModelUnavailable."""
        breaker.admit()  # while the role's circuit is open: ModelUnavailable at once, no request
        attempt = 0
        while True:
            handle = self.limiter.acquire(estimate)
            try:
                response = send()
            except (openai.APIStatusError, openai.APIConnectionError) as exc:
                self.limiter.settle(handle, 0)
                self.ledger.record(SpendRow(role, model, failures=1))
                if getattr(exc, "status_code", None) != PACING:
                    breaker.failed()
                # An open circuit ends the retries too: the next request would be refused anyway.
                wait = None if breaker.is_open else self._wait_before_retry(exc, attempt)
                log.warning("model %s (%s) failed, attempt %d: %s", model, role, attempt + 1, exc)
                if wait is None:
                    raise ModelUnavailable(_describe(exc, self.base_url)) from exc
                self._sleep(wait)
                attempt += 1
                continue
            breaker.succeeded()  # the endpoint answered; whether the answer is usable is the caller's
            return response, handle

    def _completion(
        self, role: Role, model: str, response: ChatCompletion, handle: list[float], estimate: int
    ) -> Completion:
        text, finish, prompt, completion = self._settled(role.value, model, response, handle, estimate)
        if finish == "length":
            raise ModelOutputInvalid(
                f"the answer was cut at {self._max_output} tokens (TEAMLORE_LLM_MAX_OUTPUT_TOKENS)"
            )
        return Completion(text, model, prompt, completion)

    def _settled(
        self, role: str, model: str, response: ChatCompletion, handle: list[float], estimate: int
    ) -> tuple[str, str | None, int, int]:
        """A chat completion's text, finish reason and token counts, its tokens settled with the
        rate limiter and its call in the spend ledger (a failure there when it is no completion)."""
        try:
            choice = response.choices[0]
            text = choice.message.content or ""
            finish = choice.finish_reason
        except (AttributeError, IndexError, TypeError) as exc:
            self.ledger.record(SpendRow(role, model, failures=1))
            raise ModelOutputInvalid(
                f"the endpoint sent something that is not a chat completion: {exc}"
            ) from exc
        usage = getattr(response, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        self.limiter.settle(handle, prompt + completion if usage else estimate)
        self.ledger.record(SpendRow(role, model, calls=1, prompt_tokens=prompt, completion_tokens=completion))
        return text, finish, prompt, completion

    def _wait_before_retry(self, exc: Exception, attempt: int) -> float | None:
        """Seconds to wait before asking again, or None when asking again is pointless."""
        if attempt >= self._retries:
            return None
        if isinstance(exc, openai.APIStatusError):
            if exc.status_code not in RETRYABLE:
                return None
            asked = retry_after(exc.response.headers)
            if asked is not None:
                # The server said when; a wait longer than we allow is a failure, not a hang.
                return asked if asked <= self._backoff_max else None
        backoff = self._backoff * 2.0**attempt
        return min(backoff * (0.5 + random.random() / 2), self._backoff_max)


def _describe(exc: Exception, base_url: str) -> str:
    if isinstance(exc, openai.APITimeoutError):
        return f"the model endpoint {base_url} timed out (TEAMLORE_LLM_TIMEOUT_S)"
    if isinstance(exc, openai.APIStatusError):
        return f"the model endpoint {base_url} answered {exc.status_code}: {str(exc)[:200]}"
    return f"the model endpoint {base_url} is unreachable: {exc}"
