"""How a message is ranked with what surrounds it: the constants every message index uses (the
SQLite file's, ``stores/embedded/conversations.py``; Weaviate's, ``stores/weaviate/
conversation_rank.py``), tuned once on the LoCoMo tuning split (docs/benchmarks.md).

Chat messages are short and lean on their neighbours ("yes, that one", a photo with "look at
this"): a match spreads to the messages around it in its conversation
(``teamlore.domain.CONVERSATION_GAP``).
"""

from __future__ import annotations

# How far a match spreads (neighbours on each side) and how much of it each neighbour gets.
WINDOW = 2
SPREAD = 0.5
# The share of it the second neighbour on a side gets, beside the first (LoCoMo tuning split,
# docs/benchmarks.md; weighing what is said after a match apart from what is said before it
# gained nothing there).
FAR = 0.6
# Hybrid: the share of the keyword score in the blend (the vector half gets the rest).
KEYWORD_SHARE = 0.6
# Cosines within this of the best still count when the scope's median is higher (a tiny scope).
MIN_SPAN = 0.05
# A question naming a period ("on October 13, 2023", "in June") lifts what was said then by this
# share of the best score (measured on the LoCoMo tuning split, docs/benchmarks.md).
PERIOD_LIFT = 0.5


def step_weight(step: int) -> float:
    """The share of a match the ``step``-th neighbour on a side gets (1: the nearest)."""
    return SPREAD * (FAR if step > 1 else 1.0)


def wordy(text: str) -> bool:
    """A message with no letter or digit of its own ("🚀", "😬") says nothing its neighbours said."""
    return any(ch.isalnum() for ch in text)
