from pathlib import Path

import pytest
import yaml

from reprolab.core.layout import known_studies
from reprolab.core.params import (
    ParamsError,
    check_config,
    deep_merge,
    load_yaml,
    merged_top_level,
    study_params,
)
from tests.conftest import ROOT

SCHEMA = ROOT / "workflow/schemas/params.schema.yaml"


@pytest.fixture
def config() -> dict:
    return load_yaml(ROOT / "params.yaml")


def test_deep_merge_merges_mappings_replaces_lists_and_deletes_nulls():
    base = {"a": {"x": 1, "y": [1, 2]}, "b": 2, "c": 3}
    merged = deep_merge(base, {"a": {"y": [3]}, "c": None})
    assert merged == {"a": {"x": 1, "y": [3]}, "b": 2}
    assert base["a"]["y"] == [1, 2]


def test_study_params_applies_the_active_scale_and_drops_scales(config):
    smoke = study_params(config, "ndfa")
    ci = study_params({**config, "scale": "ci"}, "ndfa")
    assert "scales" not in smoke
    assert ci["train"]["epochs"] == config["ndfa"]["scales"]["ci"]["train"]["epochs"]
    assert smoke["train"]["epochs"] == config["ndfa"]["train"]["epochs"]


def test_top_level_scale_overrides(config):
    assert merged_top_level({**config, "scale": "ci"})["seeds"] == config["scales"]["ci"]["seeds"]
    assert merged_top_level(config)["seeds"] == config["seeds"]


def test_committed_params_are_valid(config):
    check_config(config, SCHEMA, known_studies())


def test_unknown_study_lists_known_ids(config):
    with pytest.raises(
        ParamsError, match=r"unknown study id\(s\) \['nope'\]; known ids are \['ndfa'\]"
    ):
        check_config({**config, "studies": ["ndfa", "nope"]}, SCHEMA, ["ndfa"])


def test_bad_override_is_named_with_its_scale_and_key(config):
    config["ndfa"]["scales"]["ci"]["train"]["lr"] = -1.0
    with pytest.raises(ParamsError, match=r"(?s)scale 'ci'.*key 'ndfa.train.lr'"):
        check_config(config, SCHEMA, known_studies())


def test_unknown_key_in_override_is_rejected(config):
    config["ndfa"]["scales"]["paper"]["train"]["learning_rate"] = 0.1
    with pytest.raises(ParamsError, match="learning_rate"):
        check_config(config, SCHEMA, known_studies())


def test_load_yaml_rejects_non_mapping(tmp_path: Path):
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump([1, 2]))
    with pytest.raises(ParamsError, match="expected a mapping"):
        load_yaml(path)
