"""BM25 of the serving index: Lucene's formula, per-index statistics, removal, live mask."""

from __future__ import annotations

import math

import numpy as np
import pytest

from projections.serving.bm25 import BM25Params, LexicalIndex
from projections.text.lexical import index_text, query_text, terms


def _live(n: int) -> np.ndarray:
    return np.ones(n, dtype=bool)


def test_scores_follow_lucene_bm25() -> None:
    idx = LexicalIndex(BM25Params(k1=1.2, b=0.75))  # the formula, with Lucene's constants
    docs = [["cat", "sat", "mat"], ["dog", "sat"], ["cat", "cat", "dog", "bird"]]
    for slot, d in enumerate(docs):
        idx.add(slot, d)
    n, avgdl = 3, 9 / 3

    def expected(term: str, slot: int) -> float:
        df = sum(term in d for d in docs)
        tf = docs[slot].count(term)
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(docs[slot]) / avgdl))

    hits = dict(idx.search(["cat", "dog"], 10, _live(3)))
    for slot in range(3):
        want = expected("cat", slot) + expected("dog", slot)
        assert hits.get(slot, 0.0) == pytest.approx(want, rel=1e-5)
    assert idx.search(["cat", "dog"], 1, _live(3))[0][0] == 2


def test_removed_and_masked_documents_never_come_back() -> None:
    idx = LexicalIndex()
    idx.add(0, ["alpha", "beta"])
    idx.add(1, ["alpha"])
    idx.add(2, ["gamma"])
    idx.remove(1)
    live = _live(3)
    live[1] = False
    assert [s for s, _ in idx.search(["alpha"], 5, live)] == [0]
    assert idx.df("alpha") == 1 and len(idx) == 2
    live[0] = False  # masked by the owner, still indexed
    assert idx.search(["alpha"], 5, live) == []
    assert idx.search(["nothing"], 5, _live(3)) == []
    with pytest.raises(ValueError):
        idx.add(0, ["again"])


def test_statistics_are_per_index() -> None:
    a, b = LexicalIndex(), LexicalIndex()
    for i in range(5):
        a.add(i, ["common", f"w{i}"])
    b.add(0, ["common", "rare"])
    for i in range(1, 50):
        b.add(i, [f"filler{i}"])
    # "common" is in every doc of `a` (low idf) but rare in `b` (high idf)
    assert b.search(["common"], 1, _live(50))[0][1] > a.search(["common"], 1, _live(5))[0][1]


def test_terms_stem_drop_stop_words_and_keep_chinese() -> None:
    assert terms(index_text("The cats were RUNNING to Café")) == ["cat", "were", "run", "cafe"]
    assert terms(query_text("What did Caroline research?")) == ["carolin", "research"]
    assert terms(index_text("用户喜欢绿茶")) == ["用", "户", "喜", "欢", "绿", "茶", "用户", "户喜", "喜欢", "欢绿", "绿茶"]
    assert terms("x" * 41) == []


def test_chinese_query_finds_chinese_document() -> None:
    idx = LexicalIndex()
    docs = ["主力机的显卡是 RTX 3050，显存只有 4GB", "每天凌晨三点执行数据库备份任务", "用户喜欢喝绿茶，不喜欢咖啡"]
    for slot, d in enumerate(docs):
        idx.add(slot, terms(index_text(d)))
    assert idx.search(terms(query_text("显存多大")), 3, _live(3))[0][0] == 0
    assert idx.search(terms(query_text("用户喜欢什么茶")), 3, _live(3))[0][0] == 2


def test_compiled_accumulation_is_numpys_bit_for_bit() -> None:
    from projections.serving import accumulate as acc

    assert acc.KERNEL is not None   # SciPy's kernel is found: else every query takes the slow path
    rng = np.random.default_rng(4)
    for size, terms_n in [(1, 1), (50, 3), (6000, 12), (20_000, 40)]:
        parts = []
        for _ in range(terms_n):
            df = int(rng.integers(1, size + 1))
            slots = np.sort(rng.choice(size, df, replace=False)).astype(np.int32)
            parts.append((slots, rng.random(df, dtype=np.float32) * 3))
        weights = (rng.random(terms_n) * 5).astype(np.float32)
        assert np.array_equal(acc.accumulate(size, parts, weights), acc.accumulate_numpy(size, parts, weights))
    assert np.array_equal(acc.accumulate(7, [], np.zeros(0, np.float32)), np.zeros(7, np.float32))


def test_scores_are_the_per_term_sum_in_query_order() -> None:
    import random

    rng = random.Random(4)
    vocab = [f"w{i}" for i in range(300)]
    docs = [["common"] * rng.randint(1, 2) + (["half"] if i % 2 else []) + rng.sample(vocab, 6) for i in range(6000)]
    index = LexicalIndex()
    for slot, doc in enumerate(docs):
        index.add(slot, doc)
    index.remove(17)
    n, avgdl = len(index), index._total_len / len(index)
    k1, b = index.params.k1, index.params.b
    lengths = np.array([len(d) for d in docs], dtype=np.float32)
    for query in [["common", "w3"], ["half", "common", "w7", "w7"], ["w9", "half"], ["w1", "w2", "absent"]]:
        want = np.zeros(len(docs), dtype=np.float32)
        for term in dict.fromkeys(query):
            holders = [s for s, d in enumerate(docs) if term in d]
            if not holders:
                continue
            slots = np.array(holders, dtype=np.int64)
            tfs = np.array([docs[s].count(term) for s in holders], dtype=np.float32)
            impact = tfs * (k1 + 1.0) / (tfs + k1 * (1.0 - b + b * lengths[slots] / avgdl))
            df = index.df(term)
            want[slots] += impact * np.float32(query.count(term) * math.log(1.0 + (n - df + 0.5) / (df + 0.5)))
        for _ in range(2):   # the second time from the cached impacts
            got = index.scores(query)
            assert got is not None
            got[17] = want[17] = 0.0   # removed: a stale value, masked by the owner
            assert np.array_equal(got, want)


def _expected(docs: dict[int, list[str]], query: list[str], size: int, params: BM25Params) -> np.ndarray:
    """BM25 as the formula says, term by term in query order (float32 like the index)."""
    n = len(docs)
    avgdl = sum(len(d) for d in docs.values()) / n
    k1, b = params.k1, params.b
    want = np.zeros(size, dtype=np.float32)
    for term in dict.fromkeys(query):
        holders = sorted(s for s, d in docs.items() if term in d)
        if not holders:
            continue
        slots = np.array(holders, dtype=np.int64)
        tfs = np.array([docs[s].count(term) for s in holders], dtype=np.float32)
        lengths = np.array([len(docs[s]) for s in holders], dtype=np.float32)
        impact = tfs * (k1 + 1.0) / (tfs + k1 * (1.0 - b + b * lengths / avgdl))
        df = len(holders)
        want[slots] += impact * np.float32(query.count(term) * math.log(1.0 + (n - df + 0.5) / (df + 0.5)))
    return want


def test_merges_removals_and_remapping_keep_the_formula(monkeypatch: pytest.MonkeyPatch) -> None:
    """Postings merged into the flat arrays at every size, removals settled lazily, a remapped copy:
    the scores stay the formula's, bit for bit, and so do the document frequencies."""
    import random

    from projections.serving import bm25

    monkeypatch.setattr(bm25, "MERGE_MIN", 16)
    rng = random.Random(11)
    vocab = [f"t{i}" for i in range(40)] + ["绿茶", "显存"]
    index, docs, slot = LexicalIndex(), {}, 0
    queries = [["t1", "t2"], ["t3", "绿茶", "t3"], ["显存", "t0", "absent"], ["t39"]]

    def check(idx: LexicalIndex, held: dict[int, list[str]], size: int) -> None:
        for q in queries:
            got = idx.scores(q)
            want = _expected(held, q, size, idx.params)
            assert got is not None
            got = got[:size].copy()
            got[[s for s in range(size) if s not in held]] = 0.0   # removed: stale values, masked by the owner
            assert np.array_equal(got, want), q
        for term in vocab:
            assert idx.df(term) == sum(term in d for d in held.values())
        assert len(idx) == len(held)

    for round_ in range(6):
        for _ in range(rng.randint(5, 60)):
            doc = [rng.choice(vocab) for _ in range(rng.randint(1, 12))]
            index.add(slot, doc)
            docs[slot] = doc
            slot += 1
        for victim in rng.sample(sorted(docs), k=min(len(docs) - 1, rng.randint(0, 6))):
            index.remove(victim)
            del docs[victim]
        check(index, docs, slot)
        if round_ % 2:
            moved = np.full(slot, -1, dtype=np.int64)
            live = sorted(docs)
            moved[live] = np.arange(len(live))
            index = index.remapped(moved, len(live))
            docs = {i: docs[s] for i, s in enumerate(live)}
            slot = len(live)
            check(index, docs, slot)
    with pytest.raises(ValueError, match="not reused"):
        index.remove(0)
        index.add(0, ["again"])



def test_a_merge_inserts_what_a_sort_of_everything_gives() -> None:
    """`_Postings.merged` (the added postings inserted after each term's own) equals `grouped` over the
    two concatenated: new term ids past the old offsets, terms with no old postings, an empty start."""
    from projections.serving.bm25 import _Postings

    rng = np.random.default_rng(5)
    for old_n, old_terms, new_n, new_terms in [(0, 0, 50, 7), (200, 30, 40, 30), (5000, 400, 900, 460),
                                               (30, 200, 500, 260)]:
        tids = rng.integers(0, max(old_terms, 1), old_n).astype(np.int32)
        main = _Postings.grouped(tids, rng.integers(0, 10**6, old_n).astype(np.int32),
                                 rng.integers(1, 9, old_n).astype(np.uint16), old_terms)
        add = (rng.integers(0, new_terms, new_n).astype(np.int32), rng.integers(0, 10**6, new_n).astype(np.int32),
               rng.integers(1, 9, new_n).astype(np.uint16))
        want = _Postings.grouped(*(np.concatenate([a, b]) for a, b in zip((main.tids(), main.slots, main.tfs), add)),
                                 new_terms)
        got = main.merged(*add, new_terms)
        assert np.array_equal(got.offsets, want.offsets)
        assert np.array_equal(got.slots, want.slots) and got.slots.dtype == np.int32
        assert np.array_equal(got.tfs, want.tfs) and got.tfs.dtype == np.uint16


def test_ascii_text_tokenises_as_the_general_loop_does() -> None:
    """ASCII text takes a shortcut (its words as the token regex finds them): the tokens of the general
    per-token loop, on random ASCII and mixed strings."""
    import random
    import unicodedata

    from projections.text.lexical import _IS_CJK, _TOKEN, tokens

    def general(text: str) -> list[str]:
        out: list[str] = []
        for tok in _TOKEN.findall(unicodedata.normalize("NFKC", text).lower()):
            if _IS_CJK.match(tok):
                out.extend(tok)
                out.extend(tok[i:i + 2] for i in range(len(tok) - 1))
            else:
                out.append(tok)
        return out

    rng = random.Random(7)
    alphabet = "aZ09_ -'.,\t\n!" + "喜欢猫" + "Ｆé"
    for _ in range(5000):
        text = "".join(rng.choices(alphabet, k=rng.randint(0, 30)))
        assert tokens(text) == general(text), text
