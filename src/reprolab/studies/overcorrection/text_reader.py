"""A language model as one of the study's readers: the numpy interface of `readers.Reader`
(`predict`, `readout_keys_queries`, `pool_keys`, `residuals`, `heads`, `dim`, `outputs`) over
text trials, so that the selectors, channels and measures of the trained readers run unchanged
on a pretrained LLM.

An item's "input" x is its id (one float coordinate) in the `TextTable`; its answer y is the
one-hot of its label; the reader turns ids back into texts and prompts the model
(`llm_reader.LanguageModelReader`), one prompt per forward. Keys and queries of the readout
layer are the heads' vectors concatenated, heads as contiguous blocks (the layout the trained
readers use). A text read alone (the query with no items; an item as its own query, for its
residual) is read once and kept, and so are the readings of the last batch `predict` answered,
whose readout the theory's prediction asks for next (one forward per prompt, not two).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from reprolab.studies.overcorrection.llm_reader import LanguageModelReader, Reading
from reprolab.studies.overcorrection.readers import PoolKeys
from reprolab.studies.overcorrection.text_trials import TextTable

Prompt = tuple[tuple[int, ...], tuple[int, ...], int]
"""A prompt as (item ids, their labels, the query's id)."""


class TextReader:
    """A `LanguageModelReader` reading the items and queries of one `TextTable`."""

    dim = 1

    def __init__(self, model: LanguageModelReader, table: TextTable) -> None:
        self.model = model
        self.table = table
        self.heads = model.heads
        self.outputs = len(table.label_words)
        self._alone: dict[int, Reading] = {}
        self._last: dict[Prompt, Reading] = {}

    def predict(self, x: np.ndarray, y: np.ndarray, x_query: np.ndarray) -> np.ndarray:
        """The answers (B, p) to (B,) queries after their (B, n) items."""
        prompts = list(self._prompts(x, y, x_query))
        self._last = {prompt: self._read(*prompt) for prompt in prompts}
        return np.stack([self._last[prompt].answer for prompt in prompts])

    def readout_keys_queries(
        self, x: np.ndarray, y: np.ndarray, x_query: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The items' readout keys (B, n, m) and the last position's query (B, m)."""
        readings = [
            self._last[prompt] if prompt in self._last else self._read(*prompt)
            for prompt in self._prompts(x, y, x_query)
        ]
        keys = np.stack([flat(reading.keys) for reading in readings])
        return keys, np.stack([reading.query.ravel() for reading in readings])

    def pool_keys(self, x: np.ndarray, y: np.ndarray, x_query: np.ndarray) -> PoolKeys:
        """What a memory caches of a pool (N, 1) for one (1,) query: each item's key and own
        query read from the prompt [item, query], and the query's own query and key alone."""
        query = int(x_query[0])
        singles = [self._read((item,), (label,), query) for item, label in self._items(x, y)]
        alone = self._read((), (), query)
        return PoolKeys(
            keys=np.stack([flat(reading.keys)[0] for reading in singles]),
            query=alone.query.ravel(),
            query_key=alone.query_key.ravel(),
            item_queries=np.stack([flat(reading.item_queries)[0] for reading in singles]),
        )

    def residuals(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """r_k = y_k − ŷ(∅ | x_k) for (..., 1) ids and (..., p) one-hot labels: each item's text
        read as a query with no items."""
        ids = x.reshape(-1).astype(np.int64)
        answers = np.stack([self._read((), (), int(item)).answer for item in ids])
        return y - answers.reshape(y.shape)

    def _items(self, x: np.ndarray, y: np.ndarray) -> list[tuple[int, int]]:
        """(id, label) of each item of one prompt's (n, 1) ids and (n, p) one-hot labels."""
        return [(int(item), int(label)) for item, label in zip(x[:, 0], y.argmax(-1), strict=True)]

    def _prompts(self, x: np.ndarray, y: np.ndarray, x_query: np.ndarray) -> Iterator[Prompt]:
        """(item ids, labels, query id) of each of a batch's prompts."""
        for row_x, row_y, query in zip(x, y, x_query, strict=True):
            items = self._items(row_x, row_y)
            yield (
                tuple(item for item, _ in items),
                tuple(label for _, label in items),
                int(query[0]),
            )

    def _read(self, items: Sequence[int], labels: Sequence[int], query: int) -> Reading:
        """The model's reading of one prompt; a query alone is read once."""
        if not items and query in self._alone:
            return self._alone[query]
        texts = self.table.texts
        reading = self.model.read(
            [(texts[item], label) for item, label in zip(items, labels, strict=True)],
            texts[query],
        )
        if not items:
            self._alone[query] = reading
        return reading


def flat(states: np.ndarray) -> np.ndarray:
    """(k, H, h) per-head states as (k, H·h), heads as contiguous blocks."""
    count, heads, width = states.shape
    return states.reshape(count, heads * width)
