"""The LoCoMo benchmark's data preparation (bench/locomo_data.py): evidence ids repaired as its
documentation says, turns turned into valid normalized events. No LoCoMo data is needed (nor
bundled): a two-session sample is written here."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from teamlore.domain import parse_event

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import locomo_data  # noqa: E402

KNOWN = {"D1:1", "D1:2", "D8:6", "D9:17", "D11:26", "D30:5", "D4:4"}


def test_evidence_ids_are_split_rewritten_and_unknown_ones_dropped():
    assert locomo_data.repair_evidence(["D1:1"], KNOWN) == (("D1:1",), 0, 0)
    assert locomo_data.repair_evidence(["D8:6; D9:17"], KNOWN)[0] == ("D8:6", "D9:17")
    assert locomo_data.repair_evidence(["D9:17 D4:4 D1:2"], KNOWN)[0] == ("D9:17", "D4:4", "D1:2")
    assert locomo_data.repair_evidence(["D:11:26"], KNOWN)[0] == ("D11:26",)
    assert locomo_data.repair_evidence(["D30:05"], KNOWN)[0] == ("D30:5",)
    ids, _, dropped = locomo_data.repair_evidence(["D", "D10:19", "D1:1"], KNOWN)
    assert (ids, dropped) == (("D1:1",), 2)


def test_a_sample_becomes_one_valid_event_per_turn_at_its_sessions_time(tmp_path):
    raw = [
        {
            "sample_id": "conv-99",
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Bo",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."},
                    {"speaker": "Bo", "dia_id": "D1:2", "text": "What is its name?"},
                ],
                "session_2_date_time": "9:00 am on 1 June, 2023",
                "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "Miso is doing well."}],
            },
            "qa": [
                {"question": "What did Ann adopt?", "answer": "a cat", "evidence": ["D1:1"], "category": 4},
                {"question": "Unanswerable?", "answer": "", "evidence": ["D7:1"], "category": 5},
            ],
        }
    ]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(raw))
    (sample,) = locomo_data.load(path)
    assert [q.text for q in sample.questions] == ["What did Ann adopt?"]  # no evidence left: not asked
    assert sample.evidence_dropped == 1 and not sample.tuning
    events = [parse_event(e, 40_000) for e in locomo_data.events(sample)]
    assert [e.message_id for e in events] == ["D1:1", "D1:2", "D2:1"]
    assert [e.ts.isoformat() for e in events] == [
        "2023-05-08T13:56:00+00:00",
        "2023-05-08T13:57:00+00:00",
        "2023-06-01T09:00:00+00:00",
    ]
    assert {e.channel for e in events} == {"conv99"} and events[1].author_name == "Bo"
