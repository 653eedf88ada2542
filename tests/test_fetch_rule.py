"""The one fetch rule (files/fetch.py) on its own: which links are a platform's, whatever their
spelling, and which are not, however they are dressed up."""

from __future__ import annotations

import pytest

from teamlore.files.fetch import allowed, origin_of, slack_source


@pytest.mark.parametrize(
    "link",
    [
        "https://files.slack.com/files-pri/T1-F1/report.pdf",
        "HTTPS://Files.Slack.COM/files-pri/T1-F1/report.pdf",  # scheme and host are case-blind
        "https://files.slack.com:443/files-pri/T1-F1/report.pdf",  # the default port, spelled out
    ],
)
def test_a_slack_file_link_is_slacks_however_it_is_spelled(link):
    source = slack_source("xoxb-1", "https://slack.com/api/")
    assert allowed(origin_of(link), source.origins)
    assert origin_of(link) in source.token_origins


@pytest.mark.parametrize(
    "link",
    [
        "https://files.slack.com@evil.example/report.pdf",  # user info before the real host
        "https://files.slack.com.evil.example/report.pdf",  # Slack's name as a subdomain
        "http://files.slack.com/report.pdf",  # not over TLS
        "https://files.slack.com:8443/report.pdf",  # another port is another origin
        "ftp://files.slack.com/report.pdf",
        "/files-pri/T1-F1/report.pdf",  # no host at all
        "",
    ],
)
def test_a_link_dressed_up_as_slacks_is_not(link):
    source = slack_source("xoxb-1", "https://slack.com/api/")
    assert not allowed(origin_of(link), source.origins)
    assert origin_of(link) not in source.token_origins
