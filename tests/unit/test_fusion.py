"""Recall fusion: absolute scores (calibration, monotonicity, determinism) and the baselines."""

from __future__ import annotations

import itertools
import random
import re

import pytest

from projections.queries.recall.fusion import (
    DEFAULT,
    E5,
    EPS,
    MIN_SCORE_DEFAULTS,
    FusionParams,
    LATIN_WORD_UNITS,
    LEAD_MIN_CANDIDATES,
    SCRIPT_SHARE,
    absolute_score,
    dense_leads,
    fuse,
    fuse_minmax,
    fuse_weighted,
    lexically_blind,
    minmax,
    rrf,
    script_of,
)

DENSE = [("a", 0.62), ("b", 0.60), ("c", 0.31)]
#: Weak dense candidates that fill a pool up to LEAD_MIN_CANDIDATES, so that a lead counts.
FILLERS = [(f"filler{i}", 0.05) for i in range(LEAD_MIN_CANDIDATES)]
LEX = [("c", 12.0), ("d", 6.0), ("a", 5.0)]
USE_FLOOR = MIN_SCORE_DEFAULTS["use-multilingual-v3"]


def test_absolute_score_formula() -> None:
    p = FusionParams(dense_weight=0.25, cos_floor=0.2, cos_ceiling=0.6, bm25_half=4.0, blind_floor=0.0,
                     blind_ceiling=0.8, solo_ceiling=2.0, solo_gate=2.0)
    d = EPS + (1 - EPS) * 0.5          # cos 0.4 is half way from 0.2 to 0.6
    lex = EPS + (1 - EPS) * 4 / 8      # bm25 == half -> 0.5
    assert absolute_score(0.4, 4.0, p) == pytest.approx(d**0.25 * lex**0.75)
    # the cosine alone (0.4 / 2), gated by a rival lexical match elsewhere: (1 - 0.5) ** 2
    assert absolute_score(0.4, 0.0, p) == pytest.approx(0.2)
    assert absolute_score(0.4, 0.0, p, rival_bm25=4.0) == pytest.approx(max(0.2 * 0.25, d**0.25 * EPS**0.75))
    # per query term: 8 over two terms is 4 per term, the half
    assert absolute_score(0.4, 8.0, p, query_terms=2) == pytest.approx(absolute_score(0.4, 4.0, p))
    # another script: at least the cosine's own evidence (0.4 / 0.8)
    assert absolute_score(0.4, 0.0, p, blind=True) == pytest.approx(0.5)
    assert absolute_score(0.6, None, p) == 1.0 and absolute_score(0.1, None, p) == 0.0
    assert absolute_score(None, 4.0, p) == pytest.approx(0.5)
    assert absolute_score(None, None, p) == 0.0


def test_single_weak_candidate_scores_low_and_strong_one_high() -> None:
    # Min-max gave any lone candidate 1.0; the absolute score does not.
    weak = fuse([("x", 0.15)], [("x", 1.2)])
    strong = fuse([("y", 0.72)], [("y", 25.0)], query_terms=3)
    assert weak[0][0] == "x" and weak[0][1] < USE_FLOOR
    assert strong[0][0] == "y" and strong[0][1] > 0.7
    assert fuse_minmax([("x", 0.15)], [("x", 1.2)])[0][1] == 1.0


def test_scores_are_comparable_across_queries() -> None:
    # The same (cosine, bm25, query length) scores the same whatever else the query's pools hold.
    alone = dict(fuse([("m", 0.5)], [("m", 8.0)], query_terms=2))["m"]
    crowded = dict(fuse([("m", 0.5), ("n", 0.7), ("o", 0.2)], [("m", 8.0), ("n", 30.0)], query_terms=2))["m"]
    assert alone == pytest.approx(crowded)


def test_score_is_monotone_in_each_signal_and_bounded() -> None:
    cosines = [-0.2, 0.0, 0.1, 0.3, 0.5, 0.8, 0.95, 1.0]
    bm25s = [0.0, 0.5, 3.0, 6.0, 12.0, 40.0]
    for params, blind, n, rival, lead in itertools.product((DEFAULT, E5), (False, True), (1, 4), (0.0, 3.0, 30.0),
                                                           (0.0, 0.04, 0.2)):
        grid = {(c, b): absolute_score(c, b, params, n, blind, rival, lead)
                for c, b in itertools.product(cosines, bm25s)}
        assert all(0.0 <= s <= 1.0 for s in grid.values())
        for c1, c2 in itertools.pairwise(cosines):
            assert all(grid[(c1, b)] <= grid[(c2, b)] for b in bm25s)
        for b1, b2 in itertools.pairwise(bm25s):   # lexical evidence never lowers a score
            assert all(grid[(c, b1)] <= grid[(c, b2)] for c in cosines)
        assert all(grid[(c, b)] >= absolute_score(c, b, params, n, False, rival, lead) for c, b in grid)  # blind
        assert all(grid[(c, b)] >= absolute_score(c, b, params, n, blind, rival) for c, b in grid)  # lead raises


def test_strong_dense_evidence_alone_carries_a_cross_lingual_hit() -> None:
    # "what is the user allergic to": the Chinese memory shares no word with the query, an English
    # distractor shares several and is nearly as close. The geometric mean alone sank the first.
    dense = [("zh_peanuts", 0.51), ("en_shellfish", 0.49), ("en_other", 0.12)]
    lexical = [("en_shellfish", 6.5), ("en_other", 2.0)]
    assert fuse(dense, lexical, query_terms=3)[0][0] == "en_shellfish"       # not known to be blind
    assert fuse(dense, lexical, query_terms=3, blind={"zh_peanuts"})[0][0] == "zh_peanuts"
    # ... but a distractor that matches the query's words well and is as close still wins
    close = [("zh_peanuts", 0.45), ("en_shellfish", 0.50)]
    assert fuse(close, [("en_shellfish", 30.0)], query_terms=3, blind={"zh_peanuts"})[0][0] == "en_shellfish"
    # no lexical match at all: the ranking is the cosine's
    assert [i for i, _ in fuse(dense, [])] == ["zh_peanuts", "en_shellfish", "en_other"]


def test_a_clear_dense_lead_carries_the_top_candidate() -> None:
    # The dense top candidate 0.11 ahead of the runner-up (the model is sure): its cosine is its
    # floor whatever the script, so a paraphrase is not sunk by a distractor sharing a common word
    # or two (lexical evidence up to lead_rival_low)
    lexical = [("en_shellfish", 2.0), ("en_other", 1.0)]
    ahead = [("zh_peanuts", 0.51), ("en_shellfish", 0.40), ("en_other", 0.12), *FILLERS]
    out = dict(fuse(ahead, lexical, query_terms=3))
    assert max(out, key=out.__getitem__) == "zh_peanuts" and out["zh_peanuts"] == pytest.approx(0.51)
    # a rival that matches the query's words well still wins
    assert fuse(ahead, [("en_shellfish", 30.0)], query_terms=3)[0][0] == "en_shellfish"
    # the floor grows from nil at a lead of lead_low to the cosine at lead_high, while the best
    # rival lexical evidence is at most lead_rival_low; it fades to nil at lead_rival_high
    p = DEFAULT
    assert absolute_score(0.5, 0.0, p, rival_bm25=1.0, lead=p.lead_low) < 0.05
    half_lead = (p.lead_low + p.lead_high) / 2
    assert absolute_score(0.5, 0.0, p, rival_bm25=1.0, lead=half_lead) == pytest.approx(0.25)  # rival l 0.25
    assert absolute_score(0.5, 0.0, p, rival_bm25=1.0, lead=p.lead_high) == pytest.approx(0.5)
    assert absolute_score(0.5, 0.0, p, rival_bm25=1.0, lead=1.0) == pytest.approx(0.5)
    between = 1.5 / (1.5 + p.bm25_half)                       # rival evidence 1/3: half way to 0.4
    fade = (p.lead_rival_high - between) / (p.lead_rival_high - p.lead_rival_low)
    assert absolute_score(0.5, 0.0, p, rival_bm25=1.5, lead=1.0) == pytest.approx(0.5 * fade)
    assert absolute_score(0.5, 0.0, p, rival_bm25=2.0, lead=1.0) < 0.05                       # rival l 0.4
    # only the dense leader gets it, and a lone candidate leads by its whole cosine
    assert dict(fuse(ahead, lexical, query_terms=3))["en_other"] < 0.2
    # among too few candidates a lead says nothing: no floor
    assert dict(fuse(ahead[:3], lexical, query_terms=3))["zh_peanuts"] < 0.3


def test_dense_leads_name_the_favourite_and_a_favourite_pair() -> None:
    assert dense_leads({}) == {} and dense_leads({"a": 0.5, "b": 0.3, "c": 0.1}) == {}   # too few
    fill = dict(FILLERS)
    # a 0.02 ahead of b, both 0.1 ahead of c: a pair of favourites, each credited with 0.1
    assert dense_leads({"a": 0.52, "b": 0.5, "c": 0.4, **fill}) == {"a": pytest.approx(0.1), "b": pytest.approx(0.1)}
    # a clear single favourite keeps its own lead
    assert dense_leads({"a": 0.7, "b": 0.5, "c": 0.48, **fill}) == {"a": pytest.approx(0.2), "b": pytest.approx(0.02)}
    # ties break by id, as everywhere
    assert dense_leads({"z": 0.5, "m": 0.5, "a": 0.2, **fill}) == {"m": pytest.approx(0.3), "z": pytest.approx(0.3)}


def test_a_pair_of_favourites_both_carry() -> None:
    # A memory and its restatement in the other language both stand 0.1 above the rest: neither is
    # sunk by a distractor sharing a common word with the question.
    dense = [("en_note", 0.50), ("zh_note", 0.48), ("distractor", 0.38), ("other", 0.2), *FILLERS]
    out = fuse(dense, [("distractor", 2.0), ("other", 1.0)], query_terms=3)
    assert [i for i, _ in out[:2]] == ["en_note", "zh_note"]
    assert fuse(dense[:4], [("distractor", 2.0), ("other", 1.0)], query_terms=3)[0][0] == "distractor"


def test_lexical_evidence_raises() -> None:
    dense = [("a", 0.45), ("b", 0.42)]
    assert fuse(dense, [])[0][0] == "a"
    assert fuse(dense, [("b", 12.0)], query_terms=3)[0][0] == "b"
    before = dict(fuse(dense, [("z", 4.0)], query_terms=2))
    after = dict(fuse(dense, [("z", 4.0), ("b", 4.0)], query_terms=2))
    assert after["b"] > before["b"] and after["a"] == pytest.approx(before["a"])


def test_script_detection_and_blindness() -> None:
    assert script_of("用户对花生过敏") == "zh" and script_of("Maria is allergic to shellfish") == "en"
    assert script_of("ComfyUI runs on 主力机") == "mixed" and script_of("8189 !") == ""
    # a Latin word weighs two CJK characters: a Chinese note naming a few tools is Chinese
    assert script_of("主力机系统从 Windows 换成了 Ubuntu 24.04，打游戏用另一块硬盘上的 Windows 双系统。") == "zh"
    assert script_of("The NAS runs 群晖 DSM 7 with four drives") == "en"
    assert lexically_blind("en", "用户对花生过敏") and lexically_blind("zh", "Maria is allergic")
    assert not lexically_blind("en", "Maria is allergic") and not lexically_blind("en", "ComfyUI runs on 主力机")
    assert not lexically_blind("mixed", "用户对花生过敏") and not lexically_blind("", "Maria")


def test_script_counts_cjk_characters_and_latin_words_one_by_one() -> None:
    """script_of counts CJK characters run by run and skips ASCII texts: the same verdicts as
    counting every CJK character and every Latin word on its own, at the ranges' edges too."""
    cjk, word = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"), re.compile(r"[A-Za-z]+")

    def by_characters(text: str) -> str:
        n_cjk, n_latin = len(cjk.findall(text)), LATIN_WORD_UNITS * len(word.findall(text))
        if n_cjk + n_latin == 0:
            return ""
        share = n_cjk / (n_cjk + n_latin)
        return "zh" if share >= SCRIPT_SHARE else "en" if share <= 1.0 - SCRIPT_SHARE else "mixed"

    rng = random.Random(3)
    alphabet = ["a", "Zq", " ", "中", "文", "7", "é", "\u3400", "\u4dbf", "\u4dc0", "\u4e00", "\u9fff", "\uf900",
                "\ufaff", "\ufb00", "。", "ｆ", "あ", "한"]
    texts = ["", "8189 !", "Maria", "用户对花生过敏"] + [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))) for _ in range(3000)]
    assert [script_of(t) for t in texts] == [by_characters(t) for t in texts]
    assert {script_of(t) for t in texts} == {"", "zh", "en", "mixed"}


def test_missing_from_a_full_pool_gets_the_pool_minimum() -> None:
    p = FusionParams(pool=3)
    dense = [("a", 0.7), ("b", 0.6), ("c", 0.5)]      # full: c's 0.5 bounds the others
    lexical = [("z", 10.0), ("a", 2.0)]               # short: absent means no match
    out = dict(fuse(dense, lexical, params=p))
    assert out["z"] == pytest.approx(absolute_score(0.5, 10.0, p, rival_bm25=2.0))
    assert out["b"] == pytest.approx(absolute_score(0.6, 0.0, p, rival_bm25=10.0))
    full_lex = [("z", 10.0), ("a", 2.0), ("y", 1.5)]
    assert dict(fuse(dense, full_lex, params=p))["b"] == pytest.approx(absolute_score(0.6, 1.5, p, rival_bm25=10.0))


def test_an_empty_list_drops_out() -> None:
    only_dense = fuse(DENSE, [])
    assert [i for i, _ in only_dense] == ["a", "b", "c"]
    assert only_dense[0][1] == pytest.approx(0.62 / 0.8)
    assert [i for i, _ in fuse([], LEX)] == ["c", "d", "a"]
    assert dict(fuse([], LEX))["d"] == pytest.approx(6.0 / (6.0 + DEFAULT.bm25_half))
    assert fuse([], []) == []


def test_fuse_orders_best_first_with_lexical_weight_dominant() -> None:
    out = fuse(DENSE, LEX)
    scores = [s for _, s in out]
    assert scores == sorted(scores, reverse=True)
    assert {i for i, _ in out} == {"a", "b", "c", "d"}
    assert out[0][0] == "c"  # the strong lexical hit
    dense_heavy = fuse(DENSE, LEX, params=FusionParams(dense_weight=0.9))
    assert dense_heavy[0][0] == "a"


def test_ties_break_by_id_for_determinism() -> None:
    dense = [("z", 0.5), ("m", 0.5), ("a", 0.5)]
    assert [i for i, _ in fuse(dense, [])] == ["a", "m", "z"]
    assert [i for i, _ in fuse(dense, [("q", 3.0)], blind={"z", "m", "a"})][:3] == ["a", "m", "z"]
    assert fuse(DENSE, LEX) == fuse(list(reversed(DENSE)), list(reversed(LEX)))
    tied = [("y", 9.0), ("x", 9.0)]
    assert fuse(DENSE, tied) == fuse(DENSE, list(reversed(tied)))


def test_min_score_defaults_split_weak_from_strong() -> None:
    assert set(MIN_SCORE_DEFAULTS) == {"use-multilingual-v3", "multilingual-e5-small"}
    assert absolute_score(0.55, 10.0, DEFAULT, 3) > USE_FLOOR > absolute_score(0.2, 2.0, DEFAULT, 3, rival_bm25=9.0)
    e5_floor = MIN_SCORE_DEFAULTS["multilingual-e5-small"]
    assert absolute_score(0.87, 10.0, E5, 3) > e5_floor > absolute_score(0.80, 2.0, E5, 3, rival_bm25=9.0)


def test_minmax_baseline() -> None:
    assert minmax([("x", 3.0), ("y", 2.0), ("z", 1.0)]) == {"x": 1.0, "y": 0.5, "z": 0.0}
    assert minmax([("x", 0.4)]) == {"x": 1.0}
    assert minmax([]) == {}
    out = dict(fuse_minmax(DENSE, LEX, params=FusionParams(dense_weight=0.3)))
    assert out["a"] == pytest.approx(0.3) and out["c"] == pytest.approx(0.7)
    three = dict(fuse_weighted([(DENSE, 0.2), ([("a", 1.0)], 0.2), (LEX, 0.6)]))
    assert three["a"] == pytest.approx(0.4)


def test_rrf_baseline() -> None:
    out = dict(rrf(DENSE, LEX))
    assert out["a"] == pytest.approx(1 / 61 + 1 / 63)
    assert out["d"] == pytest.approx(1 / 62)
    assert [i for i, _ in rrf(DENSE, LEX)][:2] == ["a", "c"]  # tie broken by id
    assert rrf(DENSE, LEX, k=10, weights=[1.0, 3.0])[0][0] == "c"
    with pytest.raises(ValueError):
        rrf(DENSE, LEX, weights=[1.0])


def test_params_are_frozen_and_validated() -> None:
    assert DEFAULT.dense_weight == 0.2 and E5.dense_weight == 0.25 and DEFAULT.pool == 50
    with pytest.raises(AttributeError):
        DEFAULT.dense_weight = 0.5  # type: ignore[misc]
    for bad in ({"dense_weight": 1.5}, {"cos_floor": 0.9, "cos_ceiling": 0.8}, {"bm25_half": 0.0}, {"pool": 0},
                {"blind_floor": 1.5}, {"solo_ceiling": 0.0}, {"solo_gate": -1.0}, {"lead_low": 0.2, "lead_high": 0.1},
                {"lead_low": -0.1}, {"lead_rival_low": 0.5, "lead_rival_high": 0.4}):
        with pytest.raises(ValueError):
            FusionParams(**bad)


def _fuse_one_by_one(dense, lexical, params=DEFAULT, query_terms=1, blind=()):
    """The definition `fuse` computes in bulk: `absolute_score` of every candidate."""
    from projections.queries.recall.fusion import _ranked, dense_leads

    cos, bm25 = dict(dense), dict(lexical)
    cos_missing = min(cos.values()) if len(cos) >= params.pool else min(params.cos_floor, 0.0)
    bm25_missing = min(bm25.values()) if len(bm25) >= params.pool else 0.0
    top = sorted(bm25.items(), key=lambda kv: (-kv[1], kv[0]))[:2]
    leads = dense_leads(cos)
    return _ranked({mid: absolute_score(cos.get(mid, cos_missing) if cos else None,
                                        bm25.get(mid, bm25_missing) if bm25 else None, params, query_terms,
                                        mid in blind, next((v for k, v in top if k != mid), 0.0),
                                        leads.get(mid, 0.0))
                    for mid in cos.keys() | bm25.keys()})


def test_fuse_in_bulk_gives_the_very_scores_of_absolute_score() -> None:
    import random

    rng = random.Random(19)
    for trial in range(300):
        n_dense, n_lex = rng.choice([0, 1, 3, 30, 100]), rng.choice([0, 1, 2, 30, 100])
        ids = [f"m{i}" for i in range(rng.randint(1, 150))]
        dense = [(m, rng.choice([rng.uniform(-0.2, 1.0), 0.5, 1.0])) for m in rng.sample(ids, min(n_dense, len(ids)))]
        lexical = [(m, rng.choice([rng.uniform(0.0, 30.0), 0.0, 7.5])) for m in rng.sample(ids, min(n_lex, len(ids)))]
        blind = set(rng.sample(ids, min(5, len(ids)))) if trial % 3 == 0 else set()
        terms = rng.choice([1, 2, 5])
        for params in (DEFAULT, E5):
            assert fuse(dense, lexical, params=params, query_terms=terms, blind=blind) == \
                _fuse_one_by_one(dense, lexical, params, terms, blind)
