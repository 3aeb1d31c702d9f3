"""The technique classifier the adaptivity and diversity proxies read: which method a proof
uses (studies.proofrank.corpus.TECHNIQUES).

A TF-IDF of word unigrams and bigrams (lower-cased, the `$...$` expressions replaced by one
token, so the classifier reads the prose: "base case", "suppose", "boxes", "odd") feeding a
multinomial logistic regression, trained on the labelled human proofs. The words that mark a
technique are features, not hand rules. Deterministic: the solver is lbfgs with a fixed
iteration cap and no randomness.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

EXPRESSION = re.compile(r"\$[^$]+\$")


def prose(text: str) -> str:
    """A proof with each expression replaced by the token `expr`."""
    return EXPRESSION.sub(" expr ", text).lower()


def train_classifier(texts: Sequence[str], techniques: Sequence[str], strength: float) -> Any:
    """A fitted pipeline (TF-IDF, logistic regression with inverse regularisation `strength`)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    model = make_pipeline(
        TfidfVectorizer(preprocessor=prose, ngram_range=(1, 2), min_df=1, sublinear_tf=True),
        LogisticRegression(C=strength, max_iter=2000),
    )
    return model.fit(list(texts), list(techniques))


def predict(model: Any, texts: Sequence[str]) -> list[str]:
    """The technique of each proof."""
    return [str(label) for label in model.predict(list(texts))]
