"""The overcorrection params checks the schema cannot express, and the tuning records' names."""

from __future__ import annotations

import copy

import pytest
import yaml

from reprolab.core.params import study_params
from reprolab.studies.overcorrection.workflow_io import check_params, tuned_methods
from tests.conftest import ROOT

CONFIG = yaml.safe_load((ROOT / "params.yaml").read_text())
PARAMS = study_params(CONFIG, "overcorrection")


def test_the_shipped_params_pass():
    check_params(PARAMS)


def test_every_reader_and_channel_has_a_record_for_mmr_and_the_theory():
    methods = tuned_methods(PARAMS)
    assert len(methods) == len(PARAMS["readers"]) * len(PARAMS["channels"]) * 2
    assert "linear_memory_theory" in methods and "softmax_rag_mmr" in methods
    assert tuned_methods(PARAMS, "{reader}")[0] == "{reader}_icl_mmr"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda p: p["claims"].update(baselines=["random", "bm25"]), "'bm25'"),
        (lambda p: p["selectors"].remove("mmr"), "'mmr'"),
        (lambda p: p.update(ks=[2, 80]), "overcorrection.ks"),
        (lambda p: p["readers"]["softmax"].update(hidden=30), "readers.softmax"),
    ],
)
def test_a_bad_section_is_rejected_naming_the_key(change, message):
    params = copy.deepcopy(PARAMS)
    change(params)
    with pytest.raises(ValueError, match=message):
        check_params(params)
