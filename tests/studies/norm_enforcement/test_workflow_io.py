"""norm_enforcement's params check: each bad value is named before any job starts."""

from __future__ import annotations

import copy

import pytest

from reprolab.studies.norm_enforcement.workflow_io import check_params, row_name, tuned_mechanisms
from tests.conftest import study_section


@pytest.fixture
def params() -> dict:
    return copy.deepcopy(study_section("norm_enforcement", "smoke"))


def test_the_committed_params_pass(params):
    check_params(params)
    assert "none" not in tuned_mechanisms(params)
    assert row_name("fishery", "robust") == "Fishery · Robust"


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda p: p["methods"].remove("robust"), "norm_enforcement.methods"),
        (lambda p: p["environment"].pop("fishery"), "norm_enforcement.environment"),
        (lambda p: p["tune"]["grid"].update(fine=[0.5, 9.0]), "tune.grid.fine"),
        (lambda p: p["populations"].update(p9={"adaptive": 8}), "populations.p9"),
        (lambda p: p["population"].update(compliant=0), "norm_enforcement.population"),
        (lambda p: p.update(population_mechanisms=["nonsense"]), "population_mechanisms"),
        (
            lambda p: p["agents"].update(backend="language_model"),
            "agents.language_model.folder",
        ),
    ],
)
def test_a_bad_value_is_named(params, change, named):
    change(params)
    with pytest.raises(ValueError, match=named.replace(".", r"\.")):
        check_params(params)
