"""How close is close enough: the floor below which a hit found only by meaning is no hit.

An embedder scores every text against every query, and some message is always the closest, even
to "xyzzy plugh". So what a query's vector says about a hit is read against what it says about
ordinary chat on nothing in particular: the sentences of ``BACKGROUND``, written for this and
about no team's business. A hit found by meaning counts only when its cosine beats the
background's median by the embedder's ``relevance_margin`` (calibrated per model, see
docs/benchmarks.md); a keyword match counts as it is. One floor per query, computed here once and
handed to every backend and both halves of a search (facts and messages), so that every mode
and every fallback applies the same rule.
"""

from __future__ import annotations

import threading

import numpy as np

from teamlore.embedding import Embedder

BACKGROUND = (
    "good morning everyone",
    "thanks, that helps a lot",
    "I'll be a few minutes late to the call",
    "did anyone see the game last night?",
    "the coffee machine on the third floor is broken again",
    "happy birthday! 🎉",
    "lunch is on the terrace today",
    "I'm working from home tomorrow",
    "can someone share the link again?",
    "my train was delayed this morning",
    "we had a great time at the beach last weekend",
    "I just finished reading a really good book",
    "the weather has been terrible all week",
    "my kids started school this week",
    "I'm thinking about learning to play the guitar",
    "we adopted a cat from the shelter",
    "I went hiking in the mountains on Sunday",
    "the new cafe around the corner makes good sandwiches",
    "I painted the living room last month",
    "my sister is visiting from out of town",
    "let's sync after standup",
    "the meeting room is booked until noon",
    "I updated the spreadsheet with last week's numbers",
    "please review my pull request when you have a moment",
    "the printer needs more paper",
    "I moved the slides to the shared folder",
    "the client call went well",
    "we should order more snacks for the office",
    "I'm out next Friday for a doctor's appointment",
    "the wifi in the big meeting room keeps dropping",
    "the quarterly report is due at the end of the month",
    "I'll send the notes from today's meeting",
    "our flight lands at seven in the evening",
    "the bakery downtown closes early on Mondays",
    "I started running again after the holidays",
    "we watched a documentary about the ocean",
    "the garden needs watering every day in this heat",
    "I cooked pasta for the whole family",
    "my phone battery dies so fast lately",
    "the concert tickets sold out in an hour",
    "ok sounds good",
    "lol that's hilarious",
    "I agree with the plan",
    "no worries, take your time",
    "see you all on Monday",
    "welcome to the team!",
    "I'll look into it later today",
    "the kitchen fridge will be cleaned out on Friday",
)


class RelevanceFloor:
    """The least cosine a hit found by meaning needs for one query."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._background: np.ndarray | None = None
        self._lock = threading.Lock()

    def of(self, vector: np.ndarray) -> float:
        """The background's median cosine with ``vector``, plus the margin."""
        typical = float(np.median(self._vectors() @ np.asarray(vector, np.float32)))
        return typical + float(getattr(self._embedder, "relevance_margin", 0.0))

    def _vectors(self) -> np.ndarray:
        with self._lock:
            if self._background is None:
                # Embedded once per process (and cached like any passage where a cache is kept).
                cached = getattr(self._embedder, "vectors", None)
                texts = list(BACKGROUND)
                self._background = cached(texts) if cached else self._embedder.embed_passages(texts)
            return self._background
