"""The paper scale's trials: queries of a text classification set, each with a pool of
demonstrations a language model reads by their text.

A `TextTable` holds every text of a run in one list: first the demonstrations (the training
file, less the tuning queries held out by `split_demonstrations`), then the queries, so a text
is named by its id (its index). A `TextTrial` is the toy's `Trial` in those terms, the same
fields, meanings and shapes where a reader is concerned: x (N, 1) holds the items' ids, y (N, p)
their one-hot labels, x_query (1,) the query's id, y_query (p,) its one-hot truth, duplicate (N,)
the items taken as the query's lexical neighbours. Ids carry no geometry, so a trial also holds
the retriever's embeddings of its items and of its query, `inputs` (N, r) and `query_inputs`
(r,): what a retriever ranks by, and what the card's "inputs" theory rule uses in place of x.

The retriever is a dense LSA one (TF-IDF, then a truncated SVD), fitted on the demonstration
texts only, so a query's words shape it no more than any other unseen text's. A query's pool
(`text_trials`) is the round(duplicates × pool) demonstrations nearest it by cosine, the toy's
near-duplicates, and uniform draws from the rest, shuffled; draw order, per query: the other
items, then the shuffle, so a Generator seeded alike gives the same trials.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from reprolab.studies.overcorrection.text_sets import LabelledText

if TYPE_CHECKING:
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

T = TypeVar("T")

TOKEN_PATTERN = r"(?u)\b\w+\b"


@dataclass(frozen=True)
class TextTable:
    """Every text of a run with its label: ids 0 … demonstrations − 1 are the demonstration
    split, the rest the queries; `label_words[label]` is a class's answer word."""

    texts: tuple[str, ...]
    labels: tuple[int, ...]
    label_words: tuple[str, ...]
    demonstrations: int

    def __post_init__(self) -> None:
        """Check that every text has a label of the set and the split holds a demonstration."""
        if len(self.texts) != len(self.labels):
            raise ValueError(f"{len(self.texts)} texts but {len(self.labels)} labels")
        if not 1 <= self.demonstrations <= len(self.texts):
            raise ValueError(
                f"the demonstration split must hold 1 to {len(self.texts)} texts, "
                f"not {self.demonstrations}"
            )
        bad = [label for label in self.labels if not 0 <= label < len(self.label_words)]
        if bad:
            raise ValueError(f"label {bad[0]} outside the {len(self.label_words)} label words")

    def onehot(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """The one-hot labels of the texts `ids`, (len(ids), p) float64."""
        labels = np.asarray(self.labels, dtype=np.intp)[np.asarray(ids, dtype=np.intp)]
        return np.eye(len(self.label_words), dtype=np.float64)[labels]


@dataclass(frozen=True)
class TextTrial:
    """One query and its candidate pool: x (pool, 1) the items' ids into the table (float64),
    y (pool, p) their one-hot labels, x_query (1,) the query's id, y_query (p,) its one-hot
    truth, duplicate (pool,) which items are among the query's nearest demonstrations, inputs
    (pool, r) and query_inputs (r,) the retriever's embeddings of the items and of the query."""

    x: np.ndarray
    y: np.ndarray
    x_query: np.ndarray
    y_query: np.ndarray
    duplicate: np.ndarray
    inputs: np.ndarray
    query_inputs: np.ndarray


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    """The rows of `vectors` scaled to unit L2 norm, float64; a zero row stays zero."""
    vectors = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


@dataclass(frozen=True)
class Retriever:
    """A dense LSA retriever: TF-IDF (lower-cased word tokens, single characters kept, sublinear
    tf) projected on its leading singular directions, rows L2-normalised, so the dot product of
    two embeddings is their cosine. The study's RAG channel ranks items by it; it knows nothing
    of the model."""

    vectorizer: TfidfVectorizer
    svd: TruncatedSVD

    @classmethod
    def fit(cls, texts: Sequence[str], dim: int) -> Retriever:
        """Fit TF-IDF and a `dim`-component truncated SVD on `texts` (the demonstrations only).
        ARPACK needs fewer components than the matrix has rows and columns, so `dim` is capped
        at min(dim, vocabulary − 1, texts − 1); ValueError if that leaves none. ARPACK with
        random_state 0 (and scikit-learn's sign convention) makes the fit deterministic."""
        from sklearn.decomposition import TruncatedSVD
        from sklearn.feature_extraction.text import TfidfVectorizer

        if dim < 1:
            raise ValueError(f"the LSA dimension must be at least 1, not {dim}")
        vectorizer = TfidfVectorizer(
            lowercase=True, token_pattern=TOKEN_PATTERN, sublinear_tf=True, dtype=np.float64
        )
        try:
            weights = vectorizer.fit_transform(texts)
        except ValueError as error:  # scikit-learn's "empty vocabulary"
            raise ValueError(f"Retriever.fit needs a text with a word ({error})") from None
        vocabulary, count = weights.shape[1], weights.shape[0]
        components = min(dim, vocabulary - 1, count - 1)
        if components < 1:
            raise ValueError(
                f"LSA needs at least 2 texts and 2 words, got {count} texts and {vocabulary} words"
            )
        svd = TruncatedSVD(n_components=components, algorithm="arpack", random_state=0)
        svd.fit(weights)
        return cls(vectorizer, svd)

    @property
    def dim(self) -> int:
        """The embedding size r, after the cap."""
        return int(self.svd.n_components)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The unit-norm LSA embeddings of `texts`, (n, r) float64; a text with no word of the
        fitted vocabulary embeds to zero."""
        projected = self.svd.transform(self.vectorizer.transform(texts))
        return _unit_rows(np.asarray(projected, dtype=np.float64).reshape(len(texts), self.dim))


def build_table(
    demonstrations: Sequence[LabelledText],
    queries: Sequence[LabelledText],
    label_words: Sequence[str],
) -> TextTable:
    """The table of `demonstrations` (ids 0 … D − 1, in order) followed by `queries`."""
    examples = [*demonstrations, *queries]
    return TextTable(
        texts=tuple(example.text for example in examples),
        labels=tuple(example.label for example in examples),
        label_words=tuple(label_words),
        demonstrations=len(demonstrations),
    )


def split_demonstrations(examples: Sequence[T], tuning_share: float) -> tuple[list[T], list[T]]:
    """A training file's examples split into (demonstrations, tuning queries): the file's last
    round(tuning_share × len) examples (Python's round) are held out as tuning queries, the rest
    are the demonstrations, both in file order; no shuffling, so the split is deterministic.
    Tuning queries thus never come from the test file, and evaluation queries (the test file's)
    never from the training file. ValueError if the share is outside [0, 1) or leaves no
    demonstration."""
    if not 0.0 <= tuning_share < 1.0:
        raise ValueError(f"the tuning share must lie in [0, 1), got {tuning_share}")
    held_out = round(tuning_share * len(examples))
    kept = len(examples) - held_out
    if kept < 1:
        raise ValueError(
            f"a tuning share of {tuning_share} of {len(examples)} examples leaves no demonstration"
        )
    return list(examples[:kept]), list(examples[kept:])


def text_trials(
    rng: np.random.Generator,
    table: TextTable,
    embeddings: np.ndarray,
    query_ids: Sequence[int],
    pool: int,
    duplicates: float,
) -> tuple[TextTrial, ...]:
    """One trial per query id (module docstring): its pool is the round(duplicates × pool)
    demonstrations nearest the query by cosine of `embeddings` (ties to the lower id; these are
    the `duplicate` items) and pool − that many drawn uniformly without replacement from the
    other demonstrations, the whole pool then shuffled so a position says nothing. `embeddings`
    (len(table.texts), r) embeds every text of the table. ValueError if pool is not in
    0 … demonstrations, duplicates not in [0, 1], a query id is not a query of the table, or
    embeddings has the wrong number of rows."""
    count = table.demonstrations
    if not 0 <= pool <= count:
        raise ValueError(f"a pool of {pool} items needs 0 to {count} demonstrations")
    if not 0.0 <= duplicates <= 1.0:
        raise ValueError(f"the duplicate share must lie in [0, 1], got {duplicates}")
    if embeddings.ndim != 2 or embeddings.shape[0] != len(table.texts):
        raise ValueError(
            f"embeddings of shape {embeddings.shape} do not embed the {len(table.texts)} texts"
        )
    outside = [q for q in query_ids if not count <= q < len(table.texts)]
    if outside:
        raise ValueError(f"query id {outside[0]} is not in {count} … {len(table.texts) - 1}")
    unit = _unit_rows(embeddings)
    n_dup = round(duplicates * pool)
    is_dup = np.arange(pool) < n_dup
    trials = []
    for query in query_ids:
        nearest = np.argsort(-(unit[:count] @ unit[query]), kind="stable")[:n_dup]
        others = np.setdiff1d(np.arange(count), nearest)
        drawn = rng.choice(others, size=pool - n_dup, replace=False)
        order = rng.permutation(pool)
        ids = np.concatenate([nearest, drawn]).astype(np.intp)[order]
        trials.append(
            TextTrial(
                x=ids.astype(np.float64)[:, None],
                y=table.onehot(ids),
                x_query=np.array([query], dtype=np.float64),
                y_query=table.onehot([query])[0],
                duplicate=is_dup[order],
                inputs=np.asarray(embeddings[ids], dtype=np.float64),
                query_inputs=np.asarray(embeddings[query], dtype=np.float64),
            )
        )
    return tuple(trials)


def draw_queries(rng: np.random.Generator, candidates: Sequence[int], count: int) -> list[int]:
    """`count` distinct ids drawn without replacement from `candidates`, in drawn order (all of
    them, in drawn order, when count ≥ len(candidates)): the queries a run evaluates.
    ValueError if count is negative or a candidate repeats."""
    if count < 0:
        raise ValueError(f"count must be at least 0, not {count}")
    if len(set(candidates)) != len(candidates):
        raise ValueError("the candidate ids repeat")
    chosen = rng.choice(
        np.asarray(candidates, dtype=np.intp), size=min(count, len(candidates)), replace=False
    )
    return [int(i) for i in chosen]
