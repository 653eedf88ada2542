"""API tokens: hashed, role-ordered, and refusing (not emptying) a channel outside the grant."""

from __future__ import annotations

import sqlite3

import pytest

from teamlore.capabilities.access import Role
from teamlore.errors import Forbidden, InvalidInput, Unauthorized

from .conftest import WS, event
from .helpers import put


def test_a_token_is_stored_only_as_a_hash_and_authenticates(lore):
    record, secret = lore.access.create("wiki-bot", "reader", WS, ["C1"])
    grant = lore.access.authenticate(secret)
    assert grant.role is Role.READER and grant.channels == frozenset({"C1"})
    raw = sqlite3.connect(lore.settings.db_path).execute("SELECT * FROM api_tokens").fetchall()
    assert secret.split("_", 2)[2] not in repr(raw)


@pytest.mark.parametrize("token", [None, "", "nonsense", "tl_000000000000_" + "x" * 43])
def test_missing_malformed_or_unknown_tokens_are_unauthorized(lore, token):
    lore.access.create("wiki-bot", "reader", WS, ["C1"])
    with pytest.raises(Unauthorized):
        lore.access.authenticate(token)


def test_a_right_token_id_with_a_wrong_secret_is_unauthorized(lore):
    record, secret = lore.access.create("wiki-bot", "reader", WS, ["C1"])
    with pytest.raises(Unauthorized):
        lore.access.authenticate(secret[:-4] + "AAAA")


def test_a_revoked_token_stops_working(lore):
    record, secret = lore.access.create("wiki-bot", "reader", WS, ["C1"])
    lore.access.authenticate(secret)
    lore.access.revoke(record.token_id)
    with pytest.raises(Unauthorized):
        lore.access.authenticate(secret)
    with pytest.raises(InvalidInput):
        lore.access.revoke(record.token_id)


def test_a_channel_outside_the_grant_is_refused_and_inside_it_is_scoped(lore):
    grant = lore.access.authenticate(lore.access.create("r", "reader", WS, ["C1"])[1])
    assert lore.access.scope(grant, WS, ["C1"]).channels == frozenset({"C1"})
    with pytest.raises(Forbidden):
        lore.access.scope(grant, WS, ["C2"])
    with pytest.raises(Forbidden):
        lore.access.scope(grant, WS, ["C1", "C2"])
    with pytest.raises(Forbidden):
        lore.access.scope(grant, "OTHER", ["C1"])


def test_no_channel_asked_means_every_granted_channel(lore):
    put(lore, event("The launch date is 12 May.", channel="C1"))
    put(lore, event("Tacos on Friday.", channel="C2"))
    put(lore, event("Globex price is 40.", channel="C3", channel_visibility="private"))
    one = lore.access.authenticate(lore.access.create("r", "reader", WS, ["C1", "C3"])[1])
    everything = lore.access.authenticate(lore.access.create("a", "admin", WS, None)[1])
    assert lore.access.scope(one, WS, None).channels == frozenset({"C1", "C3"})
    assert lore.access.scope(everything, None, None).channels == frozenset({"C1", "C2", "C3"})


def test_roles_are_ordered(lore):
    reviewer = lore.access.authenticate(lore.access.create("rv", "reviewer", WS, ["C1"])[1])
    assert lore.access.scope(reviewer, WS, ["C1"], Role.REVIEWER)
    lore.access.require(reviewer, Role.READER)
    with pytest.raises(Forbidden):
        lore.access.require(reviewer, Role.ADMIN)


@pytest.mark.parametrize(
    ("name", "role", "channels"), [("", "reader", ["C1"]), ("x", "owner", ["C1"]), ("x", "reader", [])]
)
def test_a_token_with_no_name_an_unknown_role_or_no_channel_is_refused(lore, name, role, channels):
    with pytest.raises(InvalidInput):
        lore.access.create(name, role, WS, channels)
    assert lore.access.list() == []


def test_the_tokens_commands_create_list_and_revoke_without_showing_secrets_again(tmp_path):
    import json

    from .test_cli import run

    created = run("tokens", "create", "--name", "bot", "-w", WS, "-c", "C1", "--json", data_dir=tmp_path)
    assert created.returncode == 0, created.stderr
    token = json.loads(created.stdout)
    listed = run("tokens", "list", "--json", data_dir=tmp_path)
    # The secret is everything after "tl_<id>_" (it may hold "_" itself).
    secret = token["token"].split("_", 2)[2]
    assert token["token"] not in listed.stdout and secret not in listed.stdout
    [entry] = json.loads(listed.stdout)
    assert (
        entry["token_id"] == token["token_id"] and entry["channels"] == ["C1"] and entry["revoked_at"] is None
    )
    assert run("tokens", "revoke", token["token_id"], data_dir=tmp_path).returncode == 0
    assert json.loads(run("tokens", "list", "--json", data_dir=tmp_path).stdout)[0]["revoked_at"]
    neither = run("tokens", "create", "--name", "x", "-w", WS, data_dir=tmp_path)
    assert neither.returncode == 2 and "--all-channels" in neither.stderr
