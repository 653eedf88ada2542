"""The in-memory indexes look only at the scope (a block of vectors per channel, the neighbour
spread computed only where a message is visible) and still rank exactly as a search over every
row would: each is checked against a brute-force reference that reads every row from the file."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from teamlore.domain import ReadView, ResolvedView, Scope
from teamlore.stores.embedded.conversations import FAR, KEYWORD_SHARE, MIN_SPAN, PERIOD_LIFT, SPREAD, Scores
from teamlore.stores.embedded.facts import scope_time_sql
from teamlore.stores.embedded.vector_index import SAMPLE, SAMPLED_FROM, best_of, middle_of
from teamlore.text import content_words, words_of
from teamlore.timeutil import SENTINEL_MICROS, to_micros

from .conftest import WS, event
from .helpers import HashEmbedder, put

CHANNELS = ("C1", "C2", "C3")
WORDS = "deploy billing atlas freeze canary owner friday budget kafka vault".split()
START = datetime(2026, 1, 5, 9, tzinfo=UTC)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from teamlore.app import Teamlore
    from teamlore.config import Settings

    from .conftest import Clock

    clock = Clock(START + timedelta(days=30))
    lore = Teamlore(
        Settings(data_dir=tmp_path_factory.mktemp("scoped"), _env_file=None),
        embedder=HashEmbedder(),
        clock=clock,
    )
    put(lore, *_history())
    yield lore
    lore.close()


def _history() -> list:
    """Three channels over two days, with threads, emoji-only messages and edited texts."""
    rng = np.random.default_rng(5)
    events, posted = [], {}
    for i in range(150):
        channel = CHANNELS[i % 3]
        ts = START + timedelta(minutes=int(i * 17 + rng.integers(0, 10)))
        words = " ".join(rng.choice(WORDS, 4))
        text = "🚀" if i % 13 == 0 else f"We decided the {words} budget is {i} dollars."
        fields = {}
        if i % 7 == 3 and posted.get(channel):
            fields["thread_id"] = posted[channel]  # a reply in the channel's last thread
        message_id = f"{i + 1}.000100"
        posted.setdefault(channel, message_id)
        events.append(event(text, channel=channel, message_id=message_id, ts=_iso(ts), **fields))
        if i % 11 == 5:  # edited an hour later: a closed version
            edited = f"We decided the {words} budget is {i + 1} dollars."
            events.append(
                event(edited, kind="message.edited", channel=channel, message_id=message_id, ts=_iso(ts))
            )
    return events


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _views(now: datetime) -> list[ResolvedView]:
    middle = START + timedelta(days=1)
    return [
        ReadView().resolved(now),
        ReadView(valid_at=middle).resolved(now),
        ReadView(known_at=middle).resolved(now),
        ReadView(include_history=True).resolved(now),
    ]


def _scopes() -> list[Scope]:
    return [Scope(WS, list(c)) for n in (1, 2, 3) for c in itertools.combinations(CHANNELS, n)]


def _rows(conn, table: str) -> list:
    return conn.execute(
        f"SELECT t.vid, t.workspace, t.channel, t.valid_from, t.valid_to, t.recorded_from, t.recorded_to,"
        f" e.vector FROM {table} t LEFT JOIN embeddings e ON e.key = t.embedding_key ORDER BY t.vid"
    ).fetchall()


def _visible_rows(rows: list, scope: Scope, view: ResolvedView) -> list:
    known, valid = to_micros(view.known_at), to_micros(view.valid_at)
    return [
        r
        for r in rows
        if r[1] == scope.workspace
        and r[2] in scope.channels
        and r[5] <= known < r[6]
        and (view.include_history or r[3] <= valid < r[4])
    ]


def _cosine(blob: bytes, query: np.ndarray) -> float:
    return float(np.dot(np.frombuffer(blob, np.float32).astype(np.float64), query.astype(np.float64)))


def _same(found: list[tuple[int, float]], expected: list[tuple[int, float]]) -> None:
    assert [vid for vid, _ in found] == [vid for vid, _ in expected]
    assert np.allclose([s for _, s in found], [s for _, s in expected], atol=1e-5)


def test_fact_vectors_are_searched_per_scope_exactly_as_over_every_row(store):
    facts = store.stores.facts
    facts._index.refresh(store.stores.db.conn)
    rows = _rows(store.stores.db.conn, "fact_versions")
    assert len({r[2] for r in rows}) == 3
    for scope, view, text in itertools.product(_scopes(), _views(store.clock()), WORDS[:3]):
        query = HashEmbedder().embed_query(text)
        scored = [(r[0], _cosine(r[7], query)) for r in _visible_rows(rows, scope, view) if r[7] is not None]
        expected = sorted(scored, key=lambda p: (-p[1], p[0]))[:7]
        _same(facts._index.search(query, scope, view, 7), expected)


def test_messages_rank_per_scope_exactly_as_over_every_slot(store):
    index = store.stores.message_index
    conn = store.stores.db.conn
    index._refresh()
    rows = _rows(conn, "message_versions")
    periods = ((to_micros(START + timedelta(hours=20)), to_micros(START + timedelta(hours=30))),)
    for scope, view in itertools.product(_scopes(), _views(store.clock())):
        for text, asked in itertools.product(WORDS[:2], ((True, False), (False, True), (True, True))):
            keyword = dict(_keyword(conn, text, scope, view)[:1000]) if asked[0] else None
            vector = HashEmbedder().embed_query(text) if asked[1] else None
            for lifted in ((), periods):
                scores = Scores(keyword, vector, lifted)
                expected = _reference_rank(index._memory, rows, scope, view, scores, 9)
                _same(index._memory.rank(scope, view, scores, 9), expected)


def fts_query(text: str, channels: Iterable[str]) -> str | None:
    """The reference's FTS5 query inside the given channels: each meaningful word quoted, any of them
    may match (bm25 ranks)."""
    words = content_words(text) or words_of(text)
    if not words:
        return None
    in_channels = " OR ".join(_quote(c) for c in sorted(channels))
    return f"channel : ({in_channels}) AND ({' OR '.join(_quote(w) for w in dict.fromkeys(words))})"


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _keyword(conn, text: str, scope: Scope, view: ResolvedView, table: str = "message_versions") -> list:
    """(row id, score) of every keyword match in the scope and the view, best first, as SQLite's
    FTS5 ranks them over every row (``bm25()`` with the index's column weights): the reference
    the in-memory postings must equal: an FTS5 table built here from every version's text (the
    store keeps none for messages since schema 3, for facts since schema 4)."""
    if table == "message_versions":
        fts, weights = "reference_fts", "1.0, 1.0, 0.0"
        conn.executescript(
            "DROP TABLE IF EXISTS temp.reference_fts; CREATE VIRTUAL TABLE temp.reference_fts USING"
            " fts5(text, author_name, channel, tokenize='porter unicode61 remove_diacritics 2');"
            " INSERT INTO temp.reference_fts (rowid, text, author_name, channel)"
            " SELECT vid, text, author_name, channel FROM message_versions WHERE text != '';"
        )
    else:
        fts, weights = "reference_fts", "1.0, 0.5, 0.0"
        conn.executescript(
            "DROP TABLE IF EXISTS temp.reference_fts; CREATE VIRTUAL TABLE temp.reference_fts USING"
            " fts5(statement, entities, channel, tokenize='porter unicode61 remove_diacritics 2');"
            " INSERT INTO temp.reference_fts (rowid, statement, entities, channel)"
            " SELECT vid, statement, (SELECT group_concat(value, ' ') FROM json_each(entities)), channel"
            " FROM fact_versions;"
        )
    where, params = scope_time_sql(scope, view)
    return [
        (r[0], float(r[1]))
        for r in conn.execute(
            f"SELECT v.vid, -bm25({fts}, {weights}) AS score FROM {fts} JOIN {table} v ON v.vid = {fts}.rowid"
            f" WHERE {fts} MATCH ? AND {where} ORDER BY score DESC, v.vid",
            [fts_query(text, scope.channels), *params],
        )
    ]


def test_keywords_rank_per_scope_exactly_as_fts5_over_every_row(store):
    """Facts and messages: the in-memory bm25 gives the scores and the order FTS5 gives."""
    conn = store.stores.db.conn
    facts, messages = store.stores.facts, store.stores.message_index
    facts._index.refresh(conn)
    messages._refresh()
    for scope, view in itertools.product(_scopes(), _views(store.clock())):
        for text in ("deploy billing", "the atlas freeze budget", "kafka 42 dollars", "nothing matches"):
            expected = _keyword(conn, text, scope, view, "fact_versions")[:7]
            _same(facts._index.keyword(text, scope, view, 7), expected)
            _same(
                list(messages._matches(text, scope, view).items()), _keyword(conn, text, scope, view)[:1000]
            )


def _reference_rank(memory, rows, scope, view, scores: Scores, limit: int) -> list[tuple[int, float]]:
    """The ranking computed over every slot of the store, every visible row's cosine from the file."""
    slots = len(memory._parent_key)
    visible = _visible_rows(rows, scope, view)
    at = {r[0]: memory._where(r[0]) for r in visible}
    row_of_slot = np.full(slots, -1)
    for r in visible:
        row_of_slot[memory._row_slot[at[r[0]]]] = at[r[0]]
    blend = np.zeros(slots)
    if scores.keyword is not None:
        part = np.zeros(slots)
        for vid, score in scores.keyword.items():
            slot = memory._row_slot[memory._where(vid)]
            part[slot] = max(part[slot], score)
        top = part.max()
        blend += (part / top if top > 0 else part) * (KEYWORD_SHARE if scores.vector is not None else 1.0)
    if scores.vector is not None:
        held = [r for r in visible if r[7] is not None]
        cosines = np.array([_cosine(r[7], scores.vector) for r in held])
        part = np.zeros(slots)
        if held:
            top = cosines.max()
            floor = min(float(np.median(cosines)), top - MIN_SPAN)
            part[[memory._row_slot[at[r[0]]] for r in held]] = np.clip(
                (cosines - floor) / (top - floor), 0, None
            )
        blend += part * (1 - KEYWORD_SHARE if scores.keyword is not None else 1.0)
    spread = blend.copy()
    for step, neighbour in enumerate(memory._neighbours()):
        weight = SPREAD * (FAR if step % 2 else 1.0)
        spread += weight * np.where(neighbour >= 0, blend[np.maximum(neighbour, 0)], 0.0)
    wordy = np.zeros(slots, bool)
    for r in visible:
        wordy[memory._row_slot[at[r[0]]]] = memory._row_wordy[at[r[0]]]
    spread = np.where(wordy, spread, blend)
    for start, end in scores.periods:
        inside = (memory._slot_ts >= start) & (memory._slot_ts < end)
        spread += PERIOD_LIFT * spread.max(initial=0.0) * inside
    spread[row_of_slot < 0] = 0.0
    # Ties at the cut go as they always went: the best ``limit`` by a partition over the slots in
    # order, then best first.
    candidates = np.flatnonzero(spread > 0)
    if candidates.size > limit:
        candidates = candidates[np.argpartition(-spread[candidates], limit - 1)[:limit]]
    ranked = [(int(memory._vid[row_of_slot[s]]), float(spread[s])) for s in candidates]
    return sorted(ranked, key=lambda p: (-p[1], p[0]))


def test_int8_codes_score_within_two_thousandths_of_the_exact_cosine():
    from teamlore.stores.embedded.vector_index import _Block, _code

    rng = np.random.default_rng(3)
    block = _Block()
    vectors = rng.standard_normal((500, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for i, vector in enumerate(vectors):
        block.add(f"k{i}", vector)
    query = vectors[7] + rng.standard_normal(384).astype(np.float32)
    query /= np.linalg.norm(query)
    rows = np.arange(500)
    code, scale = _code(query)
    error = np.abs(block.rough(code, scale, rows) - block.scores(query, rows))
    assert error.max() < 0.002
    # A control: the codes carry the vectors (another query's scores differ by far more).
    other = vectors[9]
    assert np.abs(block.rough(*_code(other), rows) - block.scores(query, rows)).max() > 0.1


def test_the_int8_first_pass_finds_what_exact_search_finds(store):
    """A scope this small is searched exactly by default; forced through the int8 first pass with
    few rows re-scored, facts come back exactly as over every row, and messages are the best ones
    but for near ties, each scored within 0.015 of its exact score (the median comes from int8)."""
    facts, memory = store.stores.facts._index, store.stores.message_index._memory
    conn = store.stores.db.conn
    facts.refresh(conn)
    store.stores.message_index._refresh()
    fact_rows, message_rows = _rows(conn, "fact_versions"), _rows(conn, "message_versions")
    try:
        for index in (facts, memory):
            index.rough_from, index.rescore = 1, 4
        for scope, view, text in itertools.product(_scopes(), _views(store.clock()), WORDS[:3]):
            query = HashEmbedder().embed_query(text)
            visible = [r for r in _visible_rows(fact_rows, scope, view) if r[7] is not None]
            scored = [(r[0], _cosine(r[7], query)) for r in visible]
            _same(facts.search(query, scope, view, 7), sorted(scored, key=lambda p: (-p[1], p[0]))[:7])
            keyword = dict(_keyword(conn, text, scope, view)[:1000])
            for scores in (Scores(None, query), Scores(keyword, query)):
                every = dict(_reference_rank(memory, message_rows, scope, view, scores, len(message_rows)))
                expected = sorted(every.values(), reverse=True)[:9]
                found = memory.rank(scope, view, scores, 9)
                # The n-th found is as good as the n-th best but for a near tie, its score near its own.
                assert len(found) == len(expected)
                assert np.allclose([every[vid] for vid, _ in found], expected, atol=2e-3)
                assert np.allclose([s for _, s in found], [every[vid] for vid, _ in found], atol=1.5e-2)
    finally:
        for index in (facts, memory):
            del index.rough_from, index.rescore


def test_keywords_still_rank_as_fts5_after_rows_are_dropped(tmp_path):
    """Deleting messages blanks rows the postings already hold: they leave every document
    frequency (counted over every channel, not only the scope's), as they leave FTS5's."""
    from teamlore.app import Teamlore
    from teamlore.config import Settings

    from .conftest import Clock

    lore = Teamlore(
        Settings(data_dir=tmp_path, _env_file=None),
        embedder=HashEmbedder(),
        clock=Clock(START + timedelta(days=30)),
    )
    try:
        put(lore, *_history())
        # Messages about kafka in C2 and C3: the words are rarer once they are deleted.
        put(
            lore,
            *[
                event(
                    f"The kafka vault budget moved {i} times.",
                    channel=CHANNELS[1 + i % 2],
                    message_id=f"9{i}.000100",
                    ts=_iso(START + timedelta(hours=60, minutes=i)),
                    author_id="U9",
                    author_name="zed",
                )
                for i in range(12)
            ],
        )
        conn = lore.stores.db.conn
        facts, messages = lore.stores.facts, lore.stores.message_index
        scope, view = Scope(WS, ["C1"]), ResolvedView(lore.clock(), lore.clock(), False)
        facts._index.refresh(conn)
        messages._refresh()
        before = list(messages._matches("kafka vault", scope, view).items())
        _same(before, _keyword(conn, "kafka vault", scope, view)[:1000])  # control
        put(
            lore,
            *[
                event(
                    kind="message.deleted",
                    channel=CHANNELS[1 + i % 2],
                    message_id=f"9{i}.000100",
                    ts=_iso(START + timedelta(hours=61)),
                )
                for i in range(12)
            ],
        )
        facts._index.refresh(conn)
        messages._refresh()
        after = list(messages._matches("kafka vault", scope, view).items())
        _same(after, _keyword(conn, "kafka vault", scope, view)[:1000])
        # The scores in C1 rose: the deleted rows of C2 and C3 no longer count against the words.
        assert [vid for vid, _ in after] == [vid for vid, _ in before]
        assert all(a[1] > b[1] for a, b in zip(after, before, strict=True))
        for text in ("kafka vault", "deploy billing"):
            _same(
                facts._index.keyword(text, scope, view, 7),
                _keyword(conn, text, scope, view, "fact_versions")[:7],
            )
    finally:
        lore.close()


def test_rows_closed_after_the_index_read_them_leave_the_scope_as_in_the_file(tmp_path):
    """Each channel keeps its rows' bounds beside its positions (``_member_bounds``): a version
    closed after the index first read it (an edit, a change) must leave every view that no longer
    shows it, exactly as the file's predicate says."""
    from teamlore.app import Teamlore
    from teamlore.config import Settings

    from .conftest import Clock

    lore = Teamlore(
        Settings(data_dir=tmp_path, _env_file=None),
        embedder=HashEmbedder(),
        clock=Clock(START + timedelta(days=30)),
    )
    history = _history()
    put(lore, *history[:60])
    conn = lore.stores.db.conn
    facts, messages = lore.stores.facts._index, lore.reader._message_side._index._memory
    facts.refresh(conn)
    messages.refresh(conn)
    held = {  # the rows open when the index first read them
        table: {r[0] for r in _rows(conn, table) if r[6] == SENTINEL_MICROS}
        for table in ("fact_versions", "message_versions")
    }
    # Edits of messages the index already holds, a day later, then the rest of the history.
    edits = [
        event(
            f"We decided the budget is {i} euros now.",
            kind="message.edited",
            channel=e.channel,
            message_id=e.message_id,
            ts=_iso(START + timedelta(days=1, minutes=i)),
        )
        for i, e in enumerate(history[:60:4])
        if e.kind == "message.created"
    ]
    put(lore, *edits, *history[60:])
    facts.refresh(conn)
    messages.refresh(conn)
    for table, index in (("fact_versions", facts), ("message_versions", messages)):
        rows = _rows(conn, table)
        closed_later = [r for r in rows if r[0] in held[table] and r[6] != SENTINEL_MICROS]
        assert closed_later  # the control: rows read while open were closed afterwards
        for scope, view in itertools.product(_scopes(), _views(lore.clock())):
            expected = sorted(r[0] for r in _visible_rows(rows, scope, view))
            parts = index._scope_parts(scope, view)
            assert sorted(int(v) for _, positions, _ in parts for v in index._vid[positions]) == expected
            # and those of them holding a vector, as the semantic halves read them
            holding = index._held(parts)
            with_vector = sorted(r[0] for r in _visible_rows(rows, scope, view) if r[7] is not None)
            assert sorted(int(v) for _, positions, _ in holding for v in index._vid[positions]) == with_vector
            # each read with the vector it holds now (a message's context changed: a new vector)
            assert all((rows == index._row[positions]).all() for _, positions, rows in holding)
    lore.close()


def _score_sets() -> Iterable[np.ndarray]:
    """Scores of the shapes a ranking meets: spread, skewed, mostly zero, tied, constant; sizes
    below, at and above the sampled path."""
    rng = np.random.default_rng(11)
    for n in (5, 300, SAMPLED_FROM - 1, SAMPLED_FROM, 20_001, 100_000):
        yield rng.standard_normal(n)
        yield rng.exponential(size=n) ** 3  # a long upper tail
        sparse = np.zeros(n)
        sparse[rng.choice(n, max(1, n // 50), replace=False)] = rng.random(max(1, n // 50))
        yield sparse  # mostly zero: the bar sits on a tie
        yield np.round(rng.random(n), 2)  # many ties everywhere
        yield np.full(n, 0.25)
        yield np.sort(rng.random(n))  # sorted: a strided sample sees it evenly


def test_best_of_takes_the_highest_scores_as_a_full_partition_does():
    for scores in _score_sets():
        for count in (1, 4, 256):
            chosen = best_of(scores, count)
            want = min(count, scores.size)
            assert len(chosen) == want and len(set(chosen.tolist())) == want
            # The same values as a full sort's best (which of equal scores is taken may differ).
            assert sorted(scores[chosen].tolist()) == sorted(scores.tolist())[scores.size - want :]


def test_middle_of_is_numpys_median_to_the_bit():
    for scores in _score_sets():
        median, upper = middle_of(scores)
        assert median == float(np.median(scores))  # exactly, not approximately
        ordered = np.sort(scores)
        assert upper == float(ordered[scores.size // 2])


def test_a_sample_that_misjudges_the_scores_still_gives_the_exact_answer():
    # Every value the strided sample reads is an extreme: its bar and its middle are wrong, and
    # both helpers must notice and partition everything.
    n = 4 * SAMPLED_FROM
    rng = np.random.default_rng(5)
    for extreme in (0.0, 10.0):
        scores = rng.random(n)
        scores[:: n // SAMPLE] = extreme
        assert middle_of(scores)[0] == float(np.median(scores))
        chosen = best_of(scores, 256)
        assert sorted(scores[chosen].tolist()) == sorted(scores.tolist())[n - 256 :]
