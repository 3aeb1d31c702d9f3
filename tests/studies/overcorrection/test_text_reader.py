"""The text reader turns item ids back into texts and gives the language model's readings in
the trained readers' array shapes."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.overcorrection.llm_reader import LanguageModelReader
from reprolab.studies.overcorrection.text_reader import TextReader
from reprolab.studies.overcorrection.text_trials import TextTable
from tests.studies.overcorrection.fixtures import save_tiny_lm

TEXTS = ("the film was great", "a dull plot", "fun", "the plot was awful", "great fun")
TABLE = TextTable(TEXTS, (1, 0, 1, 0, 1), ("negative", "positive"), demonstrations=3)

pytestmark = pytest.mark.usefixtures("torch_one_thread")


@pytest.fixture(scope="module")
def reader(tmp_path_factory) -> TextReader:
    words = " ".join(TEXTS).split() + ["Input", "Answer", ":", "negative", "positive"]
    folder = save_tiny_lm(tmp_path_factory.mktemp("llama"), "llama", words)
    return TextReader(LanguageModelReader.from_folder(folder, TABLE.label_words), TABLE)


def prompts(ids: list[list[int]], queries: list[int]) -> tuple[np.ndarray, ...]:
    x = np.array(ids, dtype=np.float64)[..., None]
    y = np.stack([TABLE.onehot(row) for row in ids]).reshape(len(ids), len(ids[0]), -1)
    return x, y, np.array(queries, dtype=np.float64)[:, None]


def test_answers_keys_and_queries_are_the_models_readings(reader: TextReader):
    x, y, x_query = prompts([[0, 1], [2, 0]], [3, 4])
    answers = reader.predict(x, y, x_query)
    keys, queries = reader.readout_keys_queries(x, y, x_query)
    reading = reader.model.read([(TEXTS[2], 1), (TEXTS[0], 1)], TEXTS[4])
    np.testing.assert_array_equal(answers[1], reading.answer)
    assert keys.shape == (2, 2, reader.heads * reading.keys.shape[-1])
    np.testing.assert_array_equal(keys[1], reading.keys.reshape(2, -1))
    np.testing.assert_array_equal(queries[1], reading.query.ravel())


def test_pool_keys_read_each_item_alone_with_the_query(reader: TextReader):
    x, y, _ = prompts([[0, 1, 2]], [3])
    pool = reader.pool_keys(x[0], y[0], np.array([3.0]))
    single = reader.model.read([(TEXTS[1], 0)], TEXTS[3])
    alone = reader.model.read([], TEXTS[3])
    np.testing.assert_array_equal(pool.keys[1], single.keys.ravel())
    np.testing.assert_array_equal(pool.item_queries[1], single.item_queries.ravel())
    np.testing.assert_array_equal(pool.query, alone.query.ravel())
    np.testing.assert_array_equal(pool.query_key, alone.query_key.ravel())


def test_residuals_are_labels_less_each_items_answer_alone(reader: TextReader):
    x, y, _ = prompts([[0, 1]], [3])
    residuals = reader.residuals(x, y)
    expected = y[0, 1] - reader.model.read([], TEXTS[1]).answer
    np.testing.assert_allclose(residuals[0, 1], expected)
    assert residuals.shape == y.shape


def test_an_empty_context_answers_the_query_alone(reader: TextReader):
    x, y, x_query = prompts([[0]], [3])
    answers = reader.predict(x[:, :0], y[:, :0], x_query)
    keys, _ = reader.readout_keys_queries(x[:, :0], y[:, :0], x_query)
    np.testing.assert_array_equal(answers[0], reader.model.read([], TEXTS[3]).answer)
    assert keys.shape[:2] == (1, 0)
