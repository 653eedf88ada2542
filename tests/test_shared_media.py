"""Images and audio shared in Slack (issue 21, item 2): read by a vision or transcription model on a
local OpenAI-compatible server (real HTTP) when one is configured, their text taken as passages of
the sharing message like a PDF page's, cited with the file's name; by name only without one."""

from __future__ import annotations

import base64
import io
import struct
import wave
import zlib
from collections.abc import Iterator
from typing import Any

import pytest

from teamlore.app import Teamlore
from teamlore.domain import Scope

from .fake_slack import TEAM
from .llm_server import Reply, Request, ScriptedModel, faithful
from .test_shared_files import Chat, facts_found, open_lore
from .test_shared_files import slack as slack  # noqa: F401 - the fixture

DIAGRAM_SAYS = "The Falcon launch budget is 40 thousand euros, as the diagram shows."
STANDUP_SAYS = "Dana said the Heron migration will finish on the twelfth of March."


def png(width: int = 4, height: int = 3) -> bytes:
    """A real PNG (grey pixels), made here."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def m4a() -> bytes:
    """The opening of an MPEG-4 audio file: an ``ftyp`` box of brand ``M4A ``, then silence."""
    box = b"M4A " + struct.pack(">I", 0) + b"M4A mp42isom"
    return struct.pack(">I", 8 + len(box)) + b"ftyp" + box + b"\x00" * 64


def wav() -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as sound:
        sound.setnchannels(1)
        sound.setsampwidth(2)
        sound.setframerate(8000)
        sound.writeframes(b"\x00\x00" * 800)
    return out.getvalue()


class Media:
    """The server's answers: a vision request gets ``seen``, a transcription ``heard``, anything
    else the faithful model; ``broken`` makes the media requests fail with 503."""

    def __init__(self) -> None:
        self.seen, self.heard, self.broken, self.cut = DIAGRAM_SAYS, STANDUP_SAYS, False, False

    def __call__(self, request: Request) -> Reply:
        if request.path.endswith("/audio/transcriptions"):
            return Reply(status=503) if self.broken else Reply(content=self.heard)
        if request.images:
            finish = "length" if self.cut else "stop"
            return Reply(status=503) if self.broken else Reply(content=self.seen, finish_reason=finish)
        return faithful(request)


@pytest.fixture
def answers() -> Media:
    return Media()


@pytest.fixture
def server(answers) -> Iterator[ScriptedModel]:
    made = ScriptedModel(answers)
    yield made
    made.close()


def media_requests(server: ScriptedModel) -> tuple[list[Request], list[Request]]:
    vision = [r for r in server.chats() if r.images]
    heard = [r for r in server.requests if r.path.endswith("/audio/transcriptions")]
    return vision, heard


def llm_settings(server: ScriptedModel, **more: Any) -> dict[str, Any]:
    return {
        "llm_base_url": server.url,
        "llm_api_key": "sk-test",
        "llm_timeout_s": 2.0,
        "llm_backoff_s": 0.01,
        "llm_backoff_max_s": 0.05,
        "llm_max_retries": 1,
        **more,
    }


@pytest.fixture
def lore(tmp_path, embedder, clock, slack, server) -> Iterator[Teamlore]:
    opened = open_lore(
        tmp_path,
        embedder,
        clock,
        slack,
        **llm_settings(server, llm_model_vision="vision-1", llm_model_transcribe="whisper-1"),
    )
    yield opened
    opened.close()


def test_a_shared_image_is_read_by_the_vision_model_and_its_fact_cited_with_the_file(lore, slack, server):
    chat = Chat(lore, slack)
    image = png()
    shared = chat.post(
        1, "The planning diagram.", files=[slack.share("F1", "diagram.png", "image/png", image)]
    )

    (asked,), heard = media_requests(server)
    assert not heard
    assert asked.body["model"] == "vision-1"
    assert "never instructions" in asked.system
    assert asked.images == ["data:image/png;base64," + base64.b64encode(image).decode()]
    assert asked.user.startswith("Write out all the text in this image")
    extracted = [m["text"] for r in server.chats("extract") for m in r.data["messages"]]
    assert DIAGRAM_SAYS in extracted  # the passage went through the same (model) extraction
    assert "The planning diagram." not in str(asked.body)  # the message is not sent with it

    top = facts_found(lore, "Falcon launch budget", "C1")[0]
    assert "40 thousand euros" in top.fact.statement
    (source,) = top.sources
    assert (source.file_ref, source.shared_in) == ("diagram.png", shared)
    (ref,) = lore.search_media_references(Scope(TEAM, ["C1"]), "diagram")
    assert (ref.status, ref.detail) == ("extracted", "image: 1 passage")
    spent = {row.role: row for row in lore.stores.spend.totals()}
    assert (spent["vision"].model, spent["vision"].calls) == ("vision-1", 1)  # the spend ledger counts it

    # Re-delivery of the same event asks the model nothing again: the file is read.
    chat.post(1, "The planning diagram.", files=[slack.share("F1", "diagram.png", "image/png", image)])
    assert len(media_requests(server)[0]) == 1


def test_shared_audio_is_transcribed_and_its_fact_cited_with_the_file(lore, slack, server):
    chat = Chat(lore, slack)
    shared = chat.post(
        1, "Recording of today's standup.", files=[slack.share("F2", "standup.m4a", "audio/mp4", m4a())]
    )

    vision, (heard,) = media_requests(server)
    assert not vision
    assert heard.body["model"] == "whisper-1"
    assert heard.body["file"]["filename"] == "standup.m4a" and heard.body["file"]["data"] == m4a()

    top = facts_found(lore, "Heron migration finish", "C1")[0]
    assert "twelfth of March" in top.fact.statement
    (source,) = top.sources
    assert (source.file_ref, source.shared_in) == ("standup.m4a", shared)
    (ref,) = lore.search_media_references(Scope(TEAM, ["C1"]), "standup")
    assert (ref.status, ref.detail) == ("extracted", "audio: 1 passage")


def test_audio_named_otherwise_is_sent_with_the_name_its_bytes_say(lore, slack, server):
    chat = Chat(lore, slack)
    chat.post(1, "Voice note.", files=[slack.share("F3", "voice-note", "audio/x-wav", wav())])
    _, (heard,) = media_requests(server)
    assert heard.body["file"]["filename"] == "voice-note.wav"


def test_without_a_model_an_image_is_kept_by_name_only_and_nothing_is_sent(
    tmp_path, embedder, clock, slack, server
):
    # The endpoint is configured (extraction uses it) but no vision or transcription model.
    lore = open_lore(tmp_path, embedder, clock, slack, **llm_settings(server))
    try:
        chat = Chat(lore, slack)
        chat.post(1, "The planning diagram.", files=[slack.share("F1", "diagram.png", "image/png", png())])
        chat.post(2, "The standup.", files=[slack.share("F2", "standup.m4a", "audio/mp4", m4a())])
        assert media_requests(server) == ([], [])
        assert server.chats()  # control: the endpoint itself was used, for the messages
        assert not any(
            "40 thousand" in h.fact.statement for h in facts_found(lore, "Falcon launch budget", "C1")
        )
        (ref,) = lore.search_media_references(Scope(TEAM, ["C1"]), "diagram")
        assert (ref.name, ref.status) == ("diagram.png", "name-only")
        assert ref.detail == "image (png) is kept by name only: no model reads it (TEAMLORE_LLM_MODEL_VISION)"
        (audio,) = lore.search_media_references(Scope(TEAM, ["C1"]), "standup")
        assert audio.detail.endswith("(TEAMLORE_LLM_MODEL_TRANSCRIBE)")
        assert lore.stores.messages.passages_of(TEAM, "C1", ref.message_id) == []
    finally:
        lore.close()


def test_a_model_error_records_the_file_as_failed_and_reindex_reads_it_once_the_model_recovers(
    lore, slack, server, answers
):
    chat = Chat(lore, slack)
    answers.broken = True
    chat.post(
        1, "The Falcon kickoff is on Monday.", files=[slack.share("F1", "diagram.png", "image/png", png())]
    )

    assert facts_found(lore, "Falcon kickoff", "C1")  # the message itself is stored and read
    (ref,) = lore.search_media_references(Scope(TEAM, ["C1"]), "diagram")
    assert ref.status == "failed"
    assert ref.detail.startswith("not read: the model endpoint") and "503" in ref.detail
    assert "\n" not in ref.detail

    answers.broken = False
    (retried,) = lore.retry_files(Scope(TEAM, ["C1"]))
    assert (retried.status.value, retried.attempts) == ("extracted", 2)
    assert any("40 thousand" in h.fact.statement for h in facts_found(lore, "Falcon launch budget", "C1"))


def test_an_image_over_the_media_byte_cap_is_not_sent(tmp_path, embedder, clock, slack, server):
    lore = open_lore(
        tmp_path,
        embedder,
        clock,
        slack,
        **llm_settings(server, llm_model_vision="vision-1", file_media_max_bytes=10),
    )
    try:
        Chat(lore, slack).post(1, "Diagram.", files=[slack.share("F1", "diagram.png", "image/png", png())])
        assert media_requests(server) == ([], [])
        (ref,) = lore.search_media_references(Scope(TEAM, ["C1"]), "diagram")
        assert ref.status == "unreadable" and "TEAMLORE_FILE_MEDIA_MAX_BYTES" in ref.detail
    finally:
        lore.close()


def test_a_private_channels_image_never_reaches_another_channels_read(lore, slack, server):
    chat = Chat(lore, slack)
    chat.post(
        1,
        "The Falcon numbers, do not share.",
        channel="CPRIV",
        files=[slack.share("F1", "diagram.png", "image/png", png())],
    )
    chat.post(2, "The Falcon kickoff is on Monday.")

    inside = lore.reader.search("Falcon launch budget", Scope(TEAM, ["CPRIV"]), k=5)
    outside = lore.reader.search("Falcon launch budget", Scope(TEAM, ["C1"]), k=5)
    assert any("40 thousand" in hit.text for hit in inside.hits)  # control: the same query inside
    assert not any("40 thousand" in hit.text for hit in outside.hits)
    assert all(hit.channel == "C1" for hit in outside.hits)
    assert "40 thousand" not in lore.ask("what is the Falcon launch budget?", Scope(TEAM, ["C1"])).text


def test_the_vision_breaker_is_its_own_and_an_open_one_sends_nothing(
    tmp_path, embedder, clock, slack, server, answers
):
    settings = llm_settings(server, llm_model_vision="vision-1", llm_max_retries=0, llm_breaker_failures=1)
    lore = open_lore(tmp_path, embedder, clock, slack, **settings)
    try:
        chat = Chat(lore, slack)
        answers.broken = True
        chat.post(1, "First diagram.", files=[slack.share("F1", "one.png", "image/png", png(4, 3))])
        chat.post(
            2,
            "The Falcon kickoff is on Monday.",
            files=[slack.share("F2", "two.png", "image/png", png(5, 3))],
        )

        vision, _ = media_requests(server)
        assert len(vision) == 1  # the second image was not sent: the vision circuit is open
        (two,) = lore.search_media_references(Scope(TEAM, ["C1"]), "two")
        assert two.status == "failed" and two.detail.startswith("not read:")
        assert facts_found(lore, "Falcon kickoff", "C1")  # extraction's own circuit is closed
        spent = {row.role: row for row in lore.stores.spend.totals()}
        assert spent["vision"].failures == 1
    finally:
        lore.close()


def test_doctor_checks_the_media_models_and_warns_when_no_endpoint_serves_them(server):
    from teamlore.config import Settings
    from teamlore.doctor import check_model

    alone = check_model(Settings(_env_file=None, llm_model_vision="vision-1"))
    assert alone.ok and alone.warning and "TEAMLORE_LLM_MODEL_VISION" in alone.detail
    assert "name only" in alone.detail
    settings = Settings(
        _env_file=None, llm_base_url=server.url, llm_model_vision="vision-1", llm_model_transcribe="whisper-1"
    )
    server.models = ["gpt-4o-mini", "vision-1"]
    missing = check_model(settings)
    assert not missing.ok and "does not serve whisper-1" in missing.detail
    server.models = ["gpt-4o-mini", "vision-1", "whisper-1"]
    assert check_model(settings).ok  # control: served, nothing to say
    assert server.chats() == []  # no tokens spent


@pytest.mark.parametrize(
    ("data", "found"),
    [
        (png(), ("image", "png")),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF\x00", ("image", "jpeg")),
        (b"GIF89a\x01\x00\x01\x00", ("image", "gif")),
        (b"RIFF\x24\x00\x00\x00WEBPVP8 ", ("image", "webp")),
        (wav(), ("audio", "wav")),
        (m4a(), ("audio", "m4a")),
        (b"ID3\x04\x00\x00\x00\x00\x00\x00", ("audio", "mp3")),
        (b"\xff\xfb\x90\x64\x00\x00", ("audio", "mp3")),  # a frame without a tag
        (b"OggS\x00\x02\x00\x00", ("audio", "ogg")),
        (b"\x1a\x45\xdf\xa3\x9f\x42\x86\x81", ("audio", "webm")),
        ("text in UTF-16".encode("utf-16"), None),  # FF FE is a byte order mark, not an MP3 frame
        (b"%PDF-1.7\n", None),
        (b"\x00\x00\x00\x18ftypqt  ", None),  # a QuickTime video is not audio
        (b"plain text", None),
    ],
)
def test_the_kind_of_media_is_decided_by_the_bytes(data, found):
    from teamlore.files.media import sniff_media

    media = sniff_media(data)
    assert (None if media is None else (media.kind, media.format)) == found


def test_deleting_the_message_that_shared_the_image_retracts_what_only_the_image_said(lore, slack, server):
    from teamlore.domain import FactStatus

    chat = Chat(lore, slack)
    shared = chat.post(
        1, "The planning diagram.", files=[slack.share("F1", "diagram.png", "image/png", png())]
    )
    chat.post(2, "The Falcon kickoff is on Monday.")
    (fact,) = [
        h.fact for h in facts_found(lore, "Falcon launch budget", "C1") if "40 thousand" in h.fact.statement
    ]

    chat.delete(shared)

    assert (
        lore.reader.history(fact.fact_id, Scope(TEAM, ["C1"])).versions[-1].fact.status
        is FactStatus.RETRACTED
    )
    assert lore.stores.messages.passages_of(TEAM, "C1", shared) == []
    assert facts_found(lore, "Falcon kickoff", "C1")  # the other message stands
    vision, _ = media_requests(server)
    assert len(vision) == 1  # a delete asks no model anything


def test_a_vision_answer_cut_at_the_token_limit_or_the_character_limit_is_kept_as_partial(
    tmp_path, embedder, clock, slack, server, answers
):
    lore = open_lore(
        tmp_path,
        embedder,
        clock,
        slack,
        **llm_settings(server, llm_model_vision="vision-1", file_max_chars=30),
    )
    try:
        chat = Chat(lore, slack)
        chat.post(1, "Diagram.", files=[slack.share("F1", "one.png", "image/png", png(4, 3))])
        (one,) = lore.search_media_references(Scope(TEAM, ["C1"]), "one")
        assert (one.status, one.detail) == (
            "partial",
            "image: 1 passage; stopped at 30 characters (TEAMLORE_FILE_MAX_CHARS)",
        )
        (passage,) = lore.stores.messages.passages_of(TEAM, "C1", one.message_id)
        assert lore.stores.messages.get_message(TEAM, "C1", passage).text == DIAGRAM_SAYS[:30].strip()

        answers.seen = "The Falcon launch budget is"
        answers.cut = True
        chat.post(2, "Another.", files=[slack.share("F2", "two.png", "image/png", png(5, 3))])
        (two,) = lore.search_media_references(Scope(TEAM, ["C1"]), "two")
        assert two.status == "partial" and "TEAMLORE_LLM_MAX_OUTPUT_TOKENS" in two.detail
    finally:
        lore.close()


def test_a_name_that_lies_is_refused_and_nothing_is_sent(lore, slack, server):
    chat = Chat(lore, slack)
    chat.post(
        1,
        "Files.",
        files=[
            slack.share("F1", "photo.pdf", "application/pdf", png()),
            slack.share("F2", "song.mp3", "audio/mpeg", png(5, 3)),
            slack.share("F3", "picture.png", "image/png", wav()),
            slack.share("F4", "diagram.jpg", "image/jpeg", png(6, 3)),  # an image all the same: read
        ],
    )
    found = {
        r.name: (r.status, r.detail)
        for stem in ("photo", "song", "picture", "diagram")
        for r in lore.search_media_references(Scope(TEAM, ["C1"]), stem)
    }
    assert found["photo.pdf"] == ("unreadable", "named .pdf but its content is not a PDF")
    assert found["song.mp3"] == ("unreadable", "named .mp3 but its content is image (png)")
    assert found["picture.png"] == ("unreadable", "named .png but its content is audio (wav)")
    assert found["diagram.jpg"] == ("extracted", "image: 1 passage")
    vision, heard = media_requests(server)
    assert (len(vision), heard) == (1, [])


def test_an_image_kept_by_name_only_is_read_by_reindex_once_a_vision_model_is_configured(
    tmp_path, embedder, clock, slack, server
):
    first = open_lore(tmp_path, embedder, clock, slack, **llm_settings(server))  # no vision model yet
    try:
        chat = Chat(first, slack)
        chat.post(1, "The planning diagram.", files=[slack.share("F1", "diagram.png", "image/png", png())])
        assert first.retry_files(Scope(TEAM, ["C1"])) == []  # control: without a model, nothing to read
        (ref,) = first.search_media_references(Scope(TEAM, ["C1"]), "diagram")
        assert ref.status == "name-only"
    finally:
        first.close()
    assert media_requests(server) == ([], [])

    later = open_lore(tmp_path, embedder, clock, slack, **llm_settings(server, llm_model_vision="vision-1"))
    try:
        (read,) = later.retry_files(Scope(TEAM, ["C1"]))
        assert (read.status.value, read.attempts) == ("extracted", 2)
        assert len(media_requests(server)[0]) == 1
        found = facts_found(later, "Falcon launch budget", "C1")
        assert any("40 thousand" in h.fact.statement for h in found)
        assert later.retry_files(Scope(TEAM, ["C1"])) == []  # read once: not again
    finally:
        later.close()
