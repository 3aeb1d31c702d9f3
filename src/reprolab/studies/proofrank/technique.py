"""The technique classifier the adaptivity and diversity proxies read: which method a proof
uses (studies.proofrank.corpus.TECHNIQUES).

A TF-IDF of word unigrams and bigrams (lower-cased, the `$...$` expressions replaced by one
token, so the classifier reads the prose: "base case", "suppose", "boxes", "odd") feeding a
one-vs-rest ridge classifier, trained on the labelled human proofs. The words that mark a
technique are features, not hand rules. Ridge rather than logistic regression: the two name the
technique of held-out theorems about equally often on the bundled corpus (0.76-0.78), and ridge
is solved in closed form, about 50x faster, which matters since the study fits one classifier
per held-out theorem. Deterministic: no randomness in the solve.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

EXPRESSION = re.compile(r"\$[^$]+\$")


def prose(text: str) -> str:
    """A proof with each expression replaced by the token `expr`."""
    return EXPRESSION.sub(" expr ", text).lower()


def train_classifier(texts: Sequence[str], techniques: Sequence[str], regularisation: float) -> Any:
    """A fitted pipeline (TF-IDF, ridge classifier with penalty `regularisation`)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import RidgeClassifier
    from sklearn.pipeline import make_pipeline

    model = make_pipeline(
        TfidfVectorizer(preprocessor=prose, ngram_range=(1, 2), min_df=1, sublinear_tf=True),
        RidgeClassifier(alpha=regularisation),
    )
    return model.fit(list(texts), list(techniques))


def predict(model: Any, texts: Sequence[str]) -> list[str]:
    """The technique of each proof."""
    return [str(label) for label in model.predict(list(texts))]
