"""The paper scale's text trials: the split keeps file order, the LSA retriever's rows are unit
vectors that find a sentence's near-copy, a pool holds distinct demonstrations whose `duplicate`
items are exactly the query's nearest, labels are one-hot, the same seed gives the same trials,
and bad sizes are refused."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.overcorrection.text_sets import SST2_WORDS, LabelledText
from reprolab.studies.overcorrection.text_trials import (
    Retriever,
    build_table,
    draw_queries,
    split_demonstrations,
    text_trials,
)

SENTENCES = [
    ("a warm and wonderful film about family", 1),
    ("the plot is dull and the acting is wooden", 0),
    ("gorgeous photography and a moving score", 1),
    ("i walked out halfway through this mess", 0),
    ("a clever script with sharp dialogue", 1),
    ("tedious , overlong and utterly forgettable", 0),
    ("the cast is superb from start to finish", 1),
    ("a lazy sequel that nobody asked for", 0),
    ("funny , tender and surprisingly wise", 1),
    ("the jokes fall flat every single time", 0),
    ("an inspiring story told with great care", 1),
    ("cheap effects cannot hide a weak story", 0),
    ("the best animated feature of the year", 1),
    ("a confusing mess of half baked ideas", 0),
    ("a warm and wonderful movie about family", 1),
    ("the plot is dull and the acting is so wooden", 0),
    ("brilliant performances lift a simple tale", 1),
    ("boring characters trapped in a boring town", 0),
    ("a clever script with very sharp dialogue", 1),
    ("the director wastes a talented cast", 0),
    ("a joyful celebration of music and dance", 1),
    ("painfully slow and strangely empty", 0),
    ("gorgeous photography and a truly moving score", 1),
    ("the ending ruins whatever came before", 0),
    ("the cast is truly superb from start to finish", 1),
    ("the jokes fall flat nearly every single time", 0),
    ("cheap effects cannot hide such a weak story", 0),
    ("a thrilling ride from the first scene", 1),
    ("an inspiring story told with such great care", 1),
    ("i walked out halfway through this awful mess", 0),
]
EXAMPLES = [LabelledText(text, label) for text, label in SENTENCES]
NEAR_COPIES = {0: 14, 1: 15, 2: 22, 3: 29, 4: 18, 6: 24, 9: 25, 10: 28, 11: 26}


def make_table():
    """The first 24 sentences as demonstrations, the last 6 as queries, and their LSA
    embeddings."""
    demonstrations, queries = split_demonstrations(EXAMPLES, 0.2)
    table = build_table(demonstrations, queries, SST2_WORDS)
    retriever = Retriever.fit(table.texts[: table.demonstrations], dim=16)
    return table, retriever.embed(table.texts)


def test_the_split_keeps_file_order_and_holds_out_the_last_share():
    demonstrations, tuning = split_demonstrations(EXAMPLES, 0.2)
    assert demonstrations == EXAMPLES[:24] and tuning == EXAMPLES[24:]
    assert split_demonstrations(EXAMPLES, 0.0) == (EXAMPLES, [])
    assert split_demonstrations(list(range(10)), 0.25) == (list(range(8)), [8, 9])
    with pytest.raises(ValueError, match="1.0"):
        split_demonstrations(EXAMPLES, 1.0)
    with pytest.raises(ValueError, match="no demonstration"):
        split_demonstrations(EXAMPLES[:1], 0.9)


def test_the_table_holds_demonstrations_then_queries_with_one_hot_labels():
    table, _ = make_table()
    assert table.demonstrations == 24 and len(table.texts) == 30
    assert table.texts[24] == SENTENCES[24][0] and table.label_words == SST2_WORDS
    onehot = table.onehot([0, 1, 29])
    assert onehot.dtype == np.float64
    np.testing.assert_array_equal(onehot, [[0, 1], [1, 0], [1, 0]])
    with pytest.raises(ValueError, match="label 2"):
        build_table([LabelledText("a b", 2)], [], SST2_WORDS)


def test_the_retriever_gives_unit_rows_and_finds_a_sentences_near_copy():
    table, embeddings = make_table()
    assert embeddings.shape == (30, 16) and embeddings.dtype == np.float64
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, atol=1e-12)
    cosines = embeddings @ embeddings.T
    np.fill_diagonal(cosines, -np.inf)
    for sentence, copy in NEAR_COPIES.items():
        assert np.argmax(cosines[sentence]) == copy and np.argmax(cosines[copy]) == sentence
    retriever = Retriever.fit(table.texts[: table.demonstrations], dim=500)
    assert retriever.dim == 23
    unseen = retriever.embed(["zebra quokka", "a warm film"])
    assert not unseen[0].any() and np.linalg.norm(unseen[1]) == pytest.approx(1.0)


def test_a_pool_holds_distinct_demonstrations_and_its_duplicates_are_the_nearest():
    table, embeddings = make_table()
    queries = list(range(24, 30))
    trials = text_trials(np.random.default_rng(0), table, embeddings, queries, 10, 0.3)
    positions = []
    for query, trial in zip(queries, trials, strict=True):
        assert trial.x.shape == (10, 1) and trial.x.dtype == np.float64
        assert trial.y.shape == (10, 2) and trial.x_query.shape == (1,)
        assert trial.inputs.shape == (10, 16) and trial.query_inputs.shape == (16,)
        ids = trial.x[:, 0].astype(int)
        assert np.array_equal(ids, trial.x[:, 0]) and len(set(ids.tolist())) == 10
        assert ids.min() >= 0 and ids.max() < 24 and trial.x_query[0] == query
        cosines = embeddings[:24] @ embeddings[query]
        nearest = sorted(range(24), key=lambda i: (-cosines[i], i))[:3]
        assert sorted(ids[trial.duplicate].tolist()) == sorted(nearest)
        np.testing.assert_array_equal(trial.y, np.eye(2)[[table.labels[i] for i in ids]])
        np.testing.assert_array_equal(trial.y_query, np.eye(2)[table.labels[query]])
        np.testing.assert_array_equal(trial.inputs, embeddings[ids])
        np.testing.assert_array_equal(trial.query_inputs, embeddings[query])
        positions.extend(np.flatnonzero(trial.duplicate).tolist())
        copies = [sentence for sentence, copy in NEAR_COPIES.items() if copy == query]
        assert set(copies) <= set(ids[trial.duplicate].tolist())
    assert max(positions) > 3


def test_equal_cosines_go_to_the_lower_id_and_a_full_pool_is_every_demonstration():
    table = build_table(
        [LabelledText(f"text {i}", i % 2) for i in range(6)], [LabelledText("q", 0)], SST2_WORDS
    )
    embeddings = np.array([[0, 1], [1, 0], [0, 1], [1, 0], [1, 0], [0, 1], [1, 0]], float)
    (trial,) = text_trials(np.random.default_rng(3), table, embeddings, [6], 4, 0.5)
    assert sorted(trial.x[trial.duplicate, 0].tolist()) == [1.0, 3.0]
    (full,) = text_trials(np.random.default_rng(3), table, embeddings, [6], 6, 1.0)
    assert sorted(full.x[:, 0].tolist()) == list(range(6)) and full.duplicate.all()


def test_the_same_seed_gives_byte_equal_trials():
    table, embeddings = make_table()
    one, two, other = (
        text_trials(np.random.default_rng(seed), table, embeddings, [24, 27, 29], 12, 0.25)
        for seed in (5, 5, 6)
    )
    for a, b in zip(one, two, strict=True):
        for field in ("x", "y", "x_query", "y_query", "duplicate", "inputs", "query_inputs"):
            assert getattr(a, field).tobytes() == getattr(b, field).tobytes()
    assert one[0].x.tobytes() != other[0].x.tobytes()


def test_bad_pools_duplicate_shares_and_query_ids_are_refused():
    table, embeddings = make_table()
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="25"):
        text_trials(rng, table, embeddings, [24], 25, 0.3)
    with pytest.raises(ValueError, match="1.5"):
        text_trials(rng, table, embeddings, [24], 10, 1.5)
    with pytest.raises(ValueError, match="-0.1"):
        text_trials(rng, table, embeddings, [24], 10, -0.1)
    with pytest.raises(ValueError, match="query id 3"):
        text_trials(rng, table, embeddings, [3], 10, 0.3)
    with pytest.raises(ValueError, match="30 texts"):
        text_trials(rng, table, embeddings[:24], [24], 10, 0.3)


def test_queries_are_distinct_draws_and_all_of_them_when_more_are_asked():
    candidates = list(range(24, 30))
    drawn = draw_queries(np.random.default_rng(0), candidates, 4)
    assert len(drawn) == len(set(drawn)) == 4 and set(drawn) <= set(candidates)
    assert all(type(i) is int for i in drawn)
    everything = draw_queries(np.random.default_rng(0), candidates, 10)
    assert sorted(everything) == candidates and everything != candidates
    assert draw_queries(np.random.default_rng(0), candidates, 4) == drawn
    with pytest.raises(ValueError, match="-1"):
        draw_queries(np.random.default_rng(0), candidates, -1)
