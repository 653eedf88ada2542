"""The command line as a user runs it: a real process, real files, exit codes and --json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import SAMPLE


def run(*args: str, data_dir: Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "TEAMLORE_DATA_DIR": str(data_dir)}
    return subprocess.run(
        [sys.executable, "-m", "teamlore.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    data_dir = tmp_path_factory.mktemp("cli")
    done = run("import", str(SAMPLE), data_dir=data_dir)
    assert done.returncode == 0, done.stderr
    assert "skipped 0" in done.stdout
    return data_dir


def _one_line_error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


@pytest.mark.parametrize(
    "args",
    [
        ("search", "launch"),
        ("search", "launch", "--workspace", "T0ACME"),
        ("search", "launch", "--channel", "C01ENG"),
        ("facts", "show", "f_x", "--workspace", "T0ACME"),
        ("facts", "history", "f_x", "--channel", "C01ENG"),
    ],
)
def test_a_read_without_workspace_or_channel_exits_2_with_one_line(imported, args):
    message = _one_line_error(run(*args, data_dir=imported))
    assert "workspace" in message or "channel" in message


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("search", "x", "-w", "T0ACME", "-c", "C01ENG", "--as-of", "last tuesday"), "--as-of"),
        (("search", "x", "-w", "T0ACME", "-c", "C01ENG", "--mode", "psychic"), "mode"),
        (("search", "x", "-w", "T0ACME", "-c", "C01ENG", "--limit", "0"), "limit"),
        (("search", "", "-w", "T0ACME", "-c", "C01ENG"), "query"),
        (("import", "/nonexistent/events.jsonl"), "does not exist"),
        (("facts", "show", "f_missing", "-w", "T0ACME", "-c", "C01ENG"), "no fact f_missing"),
    ],
)
def test_bad_input_exits_2_with_a_one_line_error(imported, args, expected):
    assert expected in _one_line_error(run(*args, data_dir=imported))


def test_search_json_carries_results_sources_and_the_receipt(imported):
    done = run(
        "search",
        "Who owns the billing service?",
        "-w",
        "T0ACME",
        "-c",
        "C01ENG",
        "--limit",
        "3",
        "--json",
        data_dir=imported,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert len(data["results"]) == 3
    hit = data["results"][0]
    for key in (
        "fact_id",
        "text",
        "channel",
        "type",
        "status",
        "contested",
        "valid_from",
        "valid_to",
        "score",
        "sources",
    ):
        assert key in hit
    assert hit["channel"] == "C01ENG"
    source = hit["sources"][0]
    assert source["permalink"].startswith("https://acme.slack.com/archives/C01ENG/p")
    assert {"message_id", "author", "ts"} <= set(source)
    receipt = data["receipt"]
    assert receipt["mode_used"] == "hybrid" and receipt["fallback_taken"] is False
    assert receipt["k"] == 3 and receipt["fewer_than_k"] is False
    assert isinstance(receipt["withheld"], dict)


def test_facts_show_and_history_in_json(imported):
    found = json.loads(
        run(
            "search", "billing service owner", "-w", "T0ACME", "-c", "C01ENG", "--json", data_dir=imported
        ).stdout
    )
    fact_id = found["results"][0]["fact_id"]
    shown = json.loads(
        run("facts", "show", fact_id, "-w", "T0ACME", "-c", "C01ENG", "--json", data_dir=imported).stdout
    )
    assert shown["fact_id"] == fact_id and shown["sources"]
    history = json.loads(
        run("facts", "history", fact_id, "-w", "T0ACME", "-c", "C01ENG", "--json", data_dir=imported).stdout
    )
    assert history["versions"][0]["recorded_from"] and "valid_from" in history["versions"][0]
    assert history["audit"][0]["event"] == "created"
    # Another channel's scope cannot read it.
    _one_line_error(run("facts", "show", fact_id, "-w", "T0ACME", "-c", "C02PRODUCT", data_dir=imported))


def test_import_with_bad_lines_reports_each_and_exits_2_after_taking_the_rest(tmp_path):
    events = tmp_path / "events.jsonl"
    good = SAMPLE.read_text().splitlines()[:5]
    events.write_text("\n".join([good[0], "{broken", *good[1:]]) + "\n")
    done = run("import", str(events), "--json", data_dir=tmp_path / "store")
    assert done.returncode == 2
    summary = json.loads(done.stdout)
    assert summary["taken"] == 5 and summary["skipped"] == 1
    assert (
        done.stderr.strip() == "skipped events.jsonl:2: not JSON: Expecting property name "
        "enclosed in double quotes at column 2"
    )


@pytest.mark.timeout(900)
def test_demo_imports_the_sample_and_asks_it(demo_run):
    # The session's one plain demo run (conftest.demo_run): the same command, with the optional
    # extras refused, which the demo never needs; test_demo_serve_... below runs it with them.
    done, _, _ = demo_run
    assert done.returncode == 0, done.stderr
    assert "skipped 0" in done.stdout
    assert done.stdout.count("$ teamlore ask") == 3
    assert "Nothing known" not in done.stdout
    assert "[1] priya" in done.stdout and "https://acme.slack.com/archives/" in done.stdout
    assert "CockroachDB" in done.stdout  # the datastore as it stands, not the first decision


def test_pages_list_and_show_after_an_import(imported):
    listed = json.loads(
        run("pages", "list", "-w", "T0ACME", "-c", "C01ENG", "--json", data_dir=imported).stdout
    )
    slugs = [p["slug"] for p in listed]
    assert slugs[0] == "overview" and "decisions" in slugs and "faq" in slugs
    shown = run("pages", "show", "decisions", "-w", "T0ACME", "-c", "C01ENG", data_dir=imported)
    assert shown.returncode == 0 and shown.stdout.startswith("# Decisions")
    assert "https://acme.slack.com/archives/C01ENG/p" in shown.stdout
    page = json.loads(
        run("pages", "show", "overview", "-w", "T0ACME", "-c", "C01ENG", "--json", data_dir=imported).stdout
    )
    assert page["version"] >= 1 and page["sections"] and page["sections"][0]["citations"]
    assert "no page nowhere" in _one_line_error(
        run("pages", "show", "nowhere", "-w", "T0ACME", "-c", "C01ENG", data_dir=imported)
    )


def test_review_list_and_a_manual_fact_from_the_command_line(imported):
    listed = run("review", "list", "-w", "T0ACME", "-c", "C01ENG", "--json", data_dir=imported)
    assert listed.returncode == 0 and isinstance(json.loads(listed.stdout), list)
    added = run(
        "facts",
        "add",
        "The on-call handbook lives in Notion.",
        "-w",
        "T0ACME",
        "-c",
        "C03OPS",
        "--by",
        "rita",
        "--json",
        data_dir=imported,
    )
    assert added.returncode == 0, added.stderr
    fact = json.loads(added.stdout)
    assert fact["origin"] == "manual" and fact["status"] == "active"
    assert "--by" in _one_line_error(
        run("facts", "add", "x y z", "-w", "T0ACME", "-c", "C03OPS", data_dir=imported)
    )


def test_demo_serve_prints_a_working_url_and_admin_token(tmp_path):
    import re
    import signal
    import time

    import httpx

    from .redis_server import free_port

    port = free_port()
    env = {**os.environ, "TEAMLORE_DATA_DIR": str(tmp_path / "unused")}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "teamlore",
            "demo",
            "--serve",
            "--port",
            str(port),
            "--data-dir",
            str(tmp_path / "d"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        printed = ""
        deadline = time.monotonic() + 120
        while "Admin token" not in printed and time.monotonic() < deadline:
            line = server.stdout.readline()
            assert line or server.poll() is None, printed
            printed += line
        url = re.search(r"Wiki: (http://\S+)/wiki", printed).group(1)
        token = re.search(r"\(paste it to sign in\): (\S+)", printed).group(1)
        with httpx.Client(base_url=url, timeout=5) as http:
            for _ in range(100):
                try:
                    if http.get("/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.1)
            channels = http.get("/api/channels", headers={"Authorization": f"Bearer {token}"})
            refused = http.get(
                "/api/channels", headers={"Authorization": "Bearer tl_000000000000_" + "x" * 43}
            )
        assert channels.status_code == 200, channels.text
        assert (
            "C04LEAD" in channels.text or "G04LEAD" in channels.text
        )  # the admin sees the private channel too
        assert refused.status_code == 401  # control: the printed token is what opens it
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        server.stdout.close()


def test_pages_show_refuses_a_malformed_slug_through_the_page_reader(imported):
    bad = run("pages", "show", "../etc", "-w", "T0ACME", "-c", "C01ENG", data_dir=imported)
    assert bad.returncode == 2 and "not a page slug" in bad.stderr
    listed = run("pages", "list", "-w", "T0ACME", "-c", "C01ENG", "--json", data_dir=imported)
    slug = json.loads(listed.stdout)[0]["slug"]
    good = run("pages", "show", slug, "-w", "T0ACME", "-c", "C01ENG", "--json", data_dir=imported)
    assert good.returncode == 0 and json.loads(good.stdout)["slug"] == slug  # the control
