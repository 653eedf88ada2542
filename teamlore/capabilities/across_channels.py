"""Across channels, at read time: the newest value first, the older one flagged.

A fact lives in its channel and a change in one channel never alters another's facts (a private
channel would leak). But a reader who may see several channels should not get a stale value
first: when a read spans channels, the current facts it found are compared pairwise across
channels with the same resolver that retires facts within a channel, and where a newer fact in
one channel would have replaced an older one in another, the newer is moved ahead of the older
and the older is flagged with it ("#C02PRODUCT says ... since 2026-03-09"). Only facts the reader
was already shown are compared, so a channel outside the scope is never used to flag anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from teamlore.capabilities.hits import FactView, Hit
from teamlore.workers.resolver import Claim, Resolution, Resolver

_REPLACING = frozenset({Resolution.SUPERSEDES, Resolution.CORRECTION})


def newest_first(hits: Sequence[Hit], resolver: Resolver) -> list[Hit]:
    """``hits`` with each fact that another channel's newer fact replaces flagged and moved
    behind it; everything else keeps its rank."""
    shown = list(hits)
    facts = [h for h in shown if isinstance(h, FactView) and not h.retired]
    newer_of: dict[str, FactView] = {}
    for older in facts:
        for newer in facts:
            if newer.channel == older.channel or newer.fact.valid_from <= older.fact.valid_from:
                continue
            verdict = resolver.judge(_claim(older), _claim(newer))
            if verdict.resolution in _REPLACING:
                found = newer_of.get(older.key)
                if found is None or found.fact.valid_from < newer.fact.valid_from:
                    newer_of[older.key] = newer
    if not newer_of:
        return shown
    flagged = [
        replace(h, newer_elsewhere=newer_of[h.key].fact)
        if isinstance(h, FactView) and h.key in newer_of
        else h
        for h in shown
    ]
    return _newer_ahead(flagged, {k: v.key for k, v in newer_of.items()})


def _claim(hit: FactView) -> Claim:
    return Claim(hit.fact.statement, hit.fact.valid_from, hit.fact.fact_type.value)


def _newer_ahead(hits: list[Hit], newer_key_of: dict[str, str]) -> list[Hit]:
    """Move each replacing fact to just before the first fact it flags, if it ranked lower."""
    ordered = list(hits)
    for older_key, newer_key in newer_key_of.items():
        keys = [h.key for h in ordered]
        at_older, at_newer = keys.index(older_key), keys.index(newer_key)
        if at_newer > at_older:
            ordered.insert(at_older, ordered.pop(at_newer))
    return ordered
