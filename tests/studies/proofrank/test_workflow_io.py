"""What the proofrank rules check before any job starts: backends and the claims' names."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from reprolab.core.params import load_yaml, study_params
from reprolab.studies.proofrank.workflow_io import backends_of, check_params, trained_backends
from tests.conftest import ROOT


def section(scale: str = "smoke") -> dict[str, Any]:
    return study_params({**load_yaml(ROOT / "params.yaml"), "scale": scale}, "proofrank")


@pytest.mark.parametrize("scale", ["smoke", "ci", "paper"])
def test_the_committed_params_pass_at_every_scale(scale):
    check_params(section(scale))


def test_the_small_models_are_trained_and_the_paper_models_are_folders():
    assert trained_backends(section()) == ["lm_small", "lm_medium", "lm_large"]
    paper = section("paper")
    assert trained_backends(paper) == []
    assert len(backends_of(paper, "hf")) == 6


def changed(path: str, value: Any) -> dict[str, Any]:
    params = copy.deepcopy(section())
    *keys, last = path.split(".")
    target = params
    for key in keys:
        target = target[key]
    target[last] = value
    return params


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("backends.verbose.inner", "nobody", "backends.verbose.inner"),
        ("backends.verbose.inner", "verbose", "not a verbose one"),
        ("claims.noncompliant", "retrieval_random", "claims.noncompliant"),
        ("claims.compliant", "human_best", "random retrieval"),
        ("claims.derived", [["verbose", "nobody"]], "claims.derived"),
        ("corpus.format", "naturalproofs", "needs `files`"),
        ("judge", {"kind": "lm"}, "judge"),
    ],
)
def test_bad_params_are_refused_naming_the_key(path, value, message):
    with pytest.raises(ValueError, match=message):
        check_params(changed(path, value))
