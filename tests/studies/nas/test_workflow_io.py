"""The params checks the schema cannot express: the claims' methods and their roles, the edit
layers against the fact LM, a world batch against its editable subjects, and what a file
stream needs."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from reprolab.studies.nas.workflow_io import check_params
from tests.studies.nas.conftest import CLAIMED, METHODS

GOOD: dict[str, Any] = {
    "world": {"subjects": 300, "paraphrase_subjects": 0.5},
    "lm": {"layers": 4},
    "stream": {"source": "world"},
    "editing": {"layers": [0, 1], "batch_size": 10},
    "methods": METHODS,
    "claims": CLAIMED,
}


def changed(path: str, value: Any) -> dict[str, Any]:
    """GOOD with the value at a dotted path replaced."""
    params = copy.deepcopy(GOOD)
    *parents, last = path.split(".")
    node = params
    for key in parents:
        node = node[key]
    node[last] = value
    return params


def test_good_params_pass():
    check_params(GOOD)


@pytest.mark.parametrize(
    "path,value,message",
    [
        ("claims.nas", "memit", "nas.claims.nas"),
        ("claims.plain", "rome", "nas.claims.plain"),
        ("claims.rome_nas", "absent", "nas.claims.rome_nas"),
        ("methods.memit_tight", {"editor": "memit"}, "nas.claims.tight"),
        ("editing.layers", [1, 0], "rise"),
        ("editing.layers", [2, 3], "below the fact LM's last block"),
        ("editing.batch_size", 151, "150 editable"),
    ],
)
def test_bad_params_name_their_key(path: str, value: Any, message: str):
    with pytest.raises(ValueError, match=message):
        check_params(changed(path, value))


def test_a_file_stream_needs_its_file_model_and_texts():
    params = changed("stream", {"source": "counterfact", "file": "cf.json", "tuning_share": 0.1})
    with pytest.raises(ValueError, match="nas.model"):
        check_params(params)
    params["model"] = "models/gpt2-xl"
    with pytest.raises(ValueError, match="nas.texts.file"):
        check_params(params)
    params["texts"] = {"file": "wiki.txt"}
    check_params(params)
    params["stream"]["tuning_share"] = 1.0
    with pytest.raises(ValueError, match="tuning_share"):
        check_params(params)
