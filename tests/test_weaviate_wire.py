"""The Weaviate wire server (tests/weaviate_wire.py): several OS processes, each with its own
weaviate-client and its own empty data folder, share one fact store through it.

The basis for issue 18's multi-process test. The conformance suites run over the same server as
the ``weaviate-wire`` fact store (tests/conftest.py); this module pins what only separate
processes show: one process's writes are read by another, and two processes racing to replace
the same version cannot both succeed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _start(server, collection: str, folder: Path, *step: str) -> subprocess.Popen[str]:
    args = [sys.executable, "-m", "tests.wire_client", server.url, str(server.grpc_port)]
    return subprocess.Popen(
        [*args, collection, str(folder), *step],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _answers(*procs: subprocess.Popen[str]) -> list[object]:
    answers = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-2000:]
        answers.append(json.loads(out.strip().splitlines()[-1]))
    return answers


@pytest.fixture
def collection(weaviate_wire):
    name = f"TeamloreWire{uuid.uuid4().hex[:12]}"
    yield name
    _drop(weaviate_wire, name)


def _drop(server, name: str) -> None:
    """Delete a test's collections: the facts and the message index named after them."""
    import weaviate

    client = weaviate.connect_to_custom(
        http_host="127.0.0.1",
        http_port=server.http_port,
        http_secure=False,
        grpc_host="127.0.0.1",
        grpc_port=server.grpc_port,
        grpc_secure=False,
    )
    try:
        client.collections.delete(name)
        client.collections.delete(name + "Messages")
    finally:
        client.close()


def test_two_processes_write_and_read_the_same_facts_through_the_wire(weaviate_wire, collection, tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"  # each process's own folder; nothing shared

    wrote = _answers(
        _start(weaviate_wire, collection, one, "write", "alpha", "3"),
        _start(weaviate_wire, collection, two, "write", "beta", "3"),
    )
    assert wrote == [{"wrote": ["alpha1", "alpha2", "alpha3"]}, {"wrote": ["beta1", "beta2", "beta3"]}]

    seen_by_one, seen_by_two = _answers(
        _start(weaviate_wire, collection, one, "read", "alpha"),
        _start(weaviate_wire, collection, two, "read", "alpha"),
    )
    everything = ["alpha1", "alpha2", "alpha3", "beta1", "beta2", "beta3"]
    assert seen_by_one == seen_by_two
    assert seen_by_one["current"] == everything
    assert seen_by_two["keyword"] == ["alpha1", "alpha2", "alpha3"]  # the other process's facts, by BM25


def test_two_processes_racing_to_replace_one_version_cannot_both_win(weaviate_wire, collection, tmp_path):
    _answers(_start(weaviate_wire, collection, tmp_path / "seed", "write", "gamma", "1"))

    racers = [
        _start(weaviate_wire, collection, tmp_path / "one", "replace", "gamma1", "Gamma bills in dollars."),
        _start(weaviate_wire, collection, tmp_path / "two", "replace", "gamma1", "Gamma bills in pounds."),
    ]
    for racer in racers:  # both have checked that version 1 is current before either inserts
        assert racer.stdout is not None
        assert racer.stdout.readline().strip() == "read", racer.communicate(timeout=120)
    for racer in racers:
        assert racer.stdin is not None
        racer.stdin.write("go\n")
        racer.stdin.flush()
    outcomes = _answers(*racers)
    assert sorted(outcomes) == ["lost", "won"]

    (after,) = _answers(_start(weaviate_wire, collection, tmp_path / "three", "read", "gamma"))
    winner = ["Gamma bills in dollars.", "Gamma bills in pounds."][outcomes.index("won")]
    assert after["current"] == ["gamma1"]
    assert after["versions"]["gamma1"] == [[1, "The gamma service number 1 bills in euros."], [2, winner]]


def test_a_process_that_loses_the_race_to_create_the_collection_checks_the_winners_schema(
    weaviate_wire, collection, tmp_path
):
    """Workers starting at once each see no collection and each create it: the server refuses all
    but the first, and the others must go on with the collection the first created."""
    from teamlore.config import Settings
    from teamlore.stores.weaviate import connect
    from teamlore.stores.weaviate.schema import check_schema

    settings = Settings(
        data_dir=tmp_path,
        weaviate_url=weaviate_wire.url,
        weaviate_grpc_port=weaviate_wire.grpc_port,
        weaviate_collection=collection,
        _env_file=None,
    )
    first, second = connect(settings), connect(settings)
    try:
        assert not second.collections.exists(collection)  # what the second saw before the first won
        check_schema(first, collection)
        answers = iter([False])  # the second's first look came before the first's creation
        looked = second.collections.exists
        second.collections.exists = lambda name: next(answers) if answers.__length_hint__() else looked(name)
        check_schema(second, collection)  # refused creation, then the winner's schema is checked
    finally:
        first.close()
        second.close()


def test_a_message_indexed_by_one_process_is_searched_and_deleted_by_another(
    weaviate_wire, collection, tmp_path
):
    """The message index has no file either (issue 18, step 1): what one process indexes, another
    with its own empty folder finds; what that one deletes, the first no longer finds. Control:
    the same steps on another collection (nothing shared) find nothing."""
    one, two = tmp_path / "one", tmp_path / "two"
    _answers(
        _start(weaviate_wire, collection, one, "say", "m1", "Statuspage hosts our status page.", "0"),
        # Days apart: another conversation, so neither lifts the other.
        _start(weaviate_wire, collection, one, "say", "m2", "Grafana shows the build times.", "3"),
    )
    (heard,) = _answers(_start(weaviate_wire, collection, two, "heard", "Statuspage"))
    assert heard == {"keyword": ["m1"], "semantic": ["m1"]}
    _answers(_start(weaviate_wire, collection, two, "unsay", "m1"))
    after_delete, control = _answers(
        _start(weaviate_wire, collection, one, "heard", "Statuspage"),
        _start(weaviate_wire, collection, one, "heard", "Grafana"),
    )
    assert after_delete == {"keyword": [], "semantic": ["m2"]}
    assert control["keyword"] == ["m2"]
    elsewhere = f"{collection}Other"
    try:
        (apart,) = _answers(_start(weaviate_wire, elsewhere, two, "heard", "Grafana"))
    finally:
        _drop(weaviate_wire, elsewhere)
    assert apart == {"keyword": [], "semantic": []}
