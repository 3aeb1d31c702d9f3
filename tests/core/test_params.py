import copy
import dataclasses
import importlib
import math
import re
import shutil
from pathlib import Path

import jsonschema
import pytest
import yaml

import reprolab
import reprolab.core.params
from reprolab.core.layout import known_families, known_studies
from reprolab.core.params import (
    SCALES,
    TOP_SCHEMA,
    ParamsError,
    check_config,
    check_config_files,
    check_section,
    dataclass_values,
    deep_merge,
    load_schema,
    load_yaml,
    merged_top_level,
    schema_dir,
    schema_registry,
    schema_uri,
    study_params,
)
from tests.conftest import ROOT

DEFS = "../defs.schema.yaml#/$defs"
METHODS = {
    "ndfa": ("reprolab.studies.ndfa.feedback", "METHODS"),
    "ssg": ("reprolab.studies.ssg.models", "METHODS"),
    "visual_queries": ("reprolab.studies.visual_queries.jobs", "METHODS"),
    "vngct": ("reprolab.studies.vngct.jobs", "METHODS"),
    "icl_manifold": ("reprolab.studies.icl_manifold.jobs", "METHODS"),
    "pem": ("reprolab.studies.pem.jobs", "METHODS"),
}
"""Where each study with a list of methods keeps the names its code implements."""


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
    check_config(config)


def test_schemas_resolve_from_the_package_without_network(config, no_network):
    schema_registry.cache_clear()
    try:
        check_config(config)
    finally:
        schema_registry.cache_clear()


def test_merged_params_of_every_section_are_valid_at_every_scale(config):
    for scale in SCALES:
        for section in [*config["studies"], *known_families()]:
            check_section(study_params({**config, "scale": scale}, section), section)


def test_schemas_are_package_data_not_workflow_files():
    folder = Path(str(schema_dir()))
    assert folder == Path(reprolab.__file__).parent / "schemas"
    assert (folder / TOP_SCHEMA).is_file()
    assert schema_uri() == (folder / TOP_SCHEMA).as_uri()
    assert not (ROOT / "workflow/schemas").exists()


def test_every_known_study_and_family_has_its_schema_file():
    top = load_schema()["properties"]
    for kind, names in (("studies", known_studies()), ("families", known_families())):
        files = sorted(p.name for p in (Path(str(schema_dir())) / kind).glob("*.schema.yaml"))
        assert files == [f"{name}.schema.yaml" for name in names], kind
        for name in names:
            assert top[name] == {"$ref": f"{kind}/{name}.schema.yaml"}
            assert load_schema(f"{kind}/{name}.schema.yaml")["type"] == "object"


def test_every_schema_file_is_a_valid_2020_12_schema():
    uris = [uri for uri in schema_registry() if uri.startswith(Path(str(schema_dir())).as_uri())]
    assert len(uris) == 1 + 1 + len(known_studies()) + len(known_families())
    for uri in uris:
        jsonschema.Draft202012Validator.check_schema(schema_registry().contents(uri))


@pytest.mark.parametrize("study", known_studies())
def test_study_schemas_use_the_shared_defs(study):
    properties = load_schema(f"studies/{study}.schema.yaml")["properties"]
    for key in ("claims", "table_digits", "scales"):
        assert properties[key]["$ref"] == f"{DEFS}/{key}", key
    if study in METHODS:
        assert properties["methods"]["$ref"] == f"{DEFS}/methods"


@pytest.mark.parametrize("study", sorted(METHODS))
def test_each_study_schema_lists_the_methods_its_code_knows(study):
    module, name = METHODS[study]
    known = list(getattr(importlib.import_module(module), name))
    items = load_schema(f"studies/{study}.schema.yaml")["properties"]["methods"]["items"]
    if "$ref" in items:  # a local definition shared with another key (ssg's sweep)
        items = load_schema(f"studies/{study}.schema.yaml")["$defs"][items["$ref"].split("/")[-1]]
    assert items["enum"] == known


def test_a_study_not_listed_in_studies_needs_no_section(config):
    config["studies"].remove("pem")
    del config["pem"]
    check_config(config)


def test_a_new_study_needs_only_its_schema_file(config, monkeypatch, tmp_path: Path):
    folder = tmp_path / "schemas"
    shutil.copytree(Path(str(schema_dir())), folder)
    (folder / "studies/toy.schema.yaml").write_text(
        "type: object\nadditionalProperties: false\nrequired: [methods]\n"
        f"properties:\n  methods: {{$ref: '{DEFS}/methods', items: {{enum: [a, b]}}}}\n"
    )
    monkeypatch.setattr(reprolab.core.params, "schema_dir", lambda: folder)
    schema_registry.cache_clear()
    try:
        config["studies"].append("toy")
        config["toy"] = {"methods": ["a", "b"]}
        check_config(config, [*known_studies(), "toy"])
        config["toy"]["methods"].append("c")
        with pytest.raises(ParamsError, match=r"key 'toy.methods.2': 'c' is not one of"):
            check_config(config, [*known_studies(), "toy"])
    finally:
        schema_registry.cache_clear()


def test_a_listed_study_without_a_schema_file_is_named(config):
    config["studies"].append("toy")
    with pytest.raises(ParamsError, match="study 'toy' has no schema studies/toy.schema.yaml"):
        check_config(config, [*known_studies(), "toy"])


def test_a_listed_study_without_its_section_is_named(config):
    del config["pem"]
    with pytest.raises(ParamsError, match=r"'pem' is a required property.*listed in `studies`"):
        check_config(config)


def test_unknown_study_lists_known_ids(config):
    with pytest.raises(
        ParamsError, match=r"unknown study id\(s\) \['nope'\]; known ids are \['ndfa'\]"
    ):
        check_config({**config, "studies": ["ndfa", "nope"]}, ["ndfa"])


def test_a_bad_value_in_a_study_section_names_the_file_key_and_expectation(config):
    config["pem"]["pem"]["lr"] = "fast"
    config["visual_queries"]["methods"].append("gpt")
    with pytest.raises(ParamsError) as caught:
        check_config(config, source="my/params.yaml")
    message = str(caught.value)
    assert message.startswith("my/params.yaml: invalid parameters")
    assert "key 'pem.pem.lr': 'fast' is not of type 'number'" in message
    assert "key 'visual_queries.methods.7': 'gpt' is not one of ['oracle', 'blind'" in message


def test_a_method_the_claims_need_is_named_with_the_reason(config):
    config["pem"]["methods"].remove("nsm")
    with pytest.raises(ParamsError, match=r"key 'pem.methods'.*so list nsm"):
        check_config(config)


def test_a_conditional_requirement_is_explained(config):
    config["visual_queries"]["scales"]["ci"]["methods"] = ["oracle", "hf_vlm"]
    with pytest.raises(
        ParamsError,
        match=r"(?s)scale 'ci'.*key 'visual_queries.hf_vlm.path': '' should be non-empty "
        r"\(the hf_vlm method is listed",
    ):
        check_config(config)


def test_bad_override_is_named_with_its_scale_key_and_origin(config):
    config["ndfa"]["scales"]["ci"]["train"]["lr"] = -1.0
    with pytest.raises(
        ParamsError,
        match=r"(?s)scale 'ci'.*key 'ndfa.train.lr': .*\[set by ndfa.scales.ci.train.lr\]",
    ):
        check_config(config)


def test_bad_global_override_is_named_with_its_origin(config):
    config["scales"]["ci"]["seeds"] = [0, -1]
    with pytest.raises(ParamsError, match=r"key 'seeds.1': .*\[set by scales.ci.seeds\]"):
        check_config(config)


def test_unknown_key_in_override_is_rejected(config):
    config["ndfa"]["scales"]["paper"]["train"]["learning_rate"] = 0.1
    with pytest.raises(ParamsError, match="'learning_rate' was unexpected"):
        check_config(config)


def test_extra_claim_settings_are_rejected_through_the_shared_defs(config):
    config["ndfa"]["claims"]["beta"] = 0.1
    with pytest.raises(ParamsError, match=r"key 'ndfa.claims'.*'beta' was unexpected"):
        check_config(config)
    config["ndfa"]["claims"] = {"alpha": 1.5}
    with pytest.raises(ParamsError, match=r"key 'ndfa.claims.alpha'"):
        check_config(config)


def test_check_section_names_the_section_and_key(config):
    values = copy.deepcopy(study_params({**config, "scale": "ci"}, "bilevel_ht"))
    values["optim"]["lambda_box"] = [1.0, 2.0]
    with pytest.raises(ParamsError, match=r"key 'bilevel_ht.optim.lambda_box.0'.*lo < 0"):
        check_section(values, "bilevel_ht")
    with pytest.raises(ParamsError, match="no schema studies/nope.schema.yaml"):
        check_section(values, "nope")


def test_load_yaml_reads_what_the_pure_python_loader_reads():
    """load_yaml reads a plain file with libyaml (FAST_LOADER) and falls back to the pure-Python
    `_PlainLoader` only for problems; both must give the same data for every params file."""
    for path in (ROOT / "params.yaml", *sorted((ROOT / "profiles").rglob("*.yaml"))):
        with open(path, "rb") as handle:
            expected = yaml.load(handle, Loader=reprolab.core.params._PlainLoader)
        assert load_yaml(path) == expected, path
    assert reprolab.core.params.FAST_LOADER is yaml.CSafeLoader  # the wheel ships libyaml


def test_load_yaml_rejects_non_mapping(tmp_path: Path):
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump([1, 2]))
    with pytest.raises(ParamsError, match="expected a mapping"):
        load_yaml(path)


def test_a_tuning_seed_in_seeds_is_rejected_at_the_scale_where_they_meet(config):
    config["scales"]["ci"]["tuning_seeds"] = [1]
    with pytest.raises(ParamsError, match=r"'seeds' and 'tuning_seeds' share \[1\] at scale 'ci'"):
        check_config(config)


def test_every_study_fixes_a_minimum_effect(config):
    del config["ssg"]["claims"]["min_effect"]
    with pytest.raises(ParamsError, match=r"key 'ssg.claims'.*'min_effect' is a required"):
        check_config(config)


PATH_LIKE = "../../../../../elsewhere/x"
"""A key that, taken as a dataset or setting name, puts a run outside results/."""


@pytest.mark.parametrize(
    "where",
    [
        ("bilevel_ht", "datasets"),
        ("icl_manifold", "settings"),
        ("ndfa", "tasks"),
        ("bilevel_ht", "methods"),
        ("wsi", "cohorts"),
    ],
)
def test_a_name_that_becomes_a_path_must_be_a_plain_name(config, where):
    entries = config[where[0]][where[1]]
    entries[PATH_LIKE] = copy.deepcopy(next(iter(entries.values())))
    key = ".".join(where)
    with pytest.raises(ParamsError, match=rf"key '{key}': '{re.escape(PATH_LIKE)}' does not match"):
        check_config(config)


@pytest.mark.parametrize("name", ["a..b", ".hidden", "-x", "a/b", "a b", "x" * 101])
def test_path_names_exclude_dot_dot_separators_and_leading_dots(config, name):
    config["icl_manifold"]["settings"][name] = config["icl_manifold"]["settings"]["circles"]
    with pytest.raises(ParamsError, match=r"key 'icl_manifold.settings': .*a name that becomes"):
        check_config(config)


def test_a_path_name_may_hold_dots_dashes_and_capitals(config):
    methods = config["bilevel_ht"]["methods"]
    methods["Dclip-0.25"] = copy.deepcopy(methods["dclip_0.1"])
    config["bilevel_ht"]["tune"]["grid"]["Dclip-0.25"] = config["bilevel_ht"]["tune"]["grid"][
        "dclip_0.1"
    ]
    check_config(config)


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (["seeds"], [1.0], "key 'seeds.0': 1.0 is not of type 'integer'"),
        (["threads"], 2.0, "key 'threads': 2.0 is not of type 'integer'"),
        (["threads"], 10000, "key 'threads': 10000 is greater than the maximum of 256"),
        (["tuning_seeds"], [2**32], "key 'tuning_seeds.0': 4294967296 is greater than the maximum"),
        (["wsi", "workers"], 512, "key 'wsi.workers': 512 is greater than the maximum of 256"),
        (["bilevel_ht", "optim", "iterations"], 10.0, "key 'bilevel_ht.optim.iterations': 10.0 is"),
    ],
)
def test_integers_must_be_ints_within_their_bounds(config, path, value, expected):
    """JSON schema's `integer` accepts 1.0; a float seed used to fail only in Snakemake (a
    MissingInputException naming no key) and a float thread count in torch.set_num_threads."""
    *parents, key = path
    node = config
    for parent in parents:
        node = node[parent]
    node[key] = value
    with pytest.raises(ParamsError, match=re.escape(expected)):
        check_config(config)


def test_a_boolean_is_not_an_integer(config):
    config["threads"] = True
    with pytest.raises(ParamsError, match="key 'threads': True is not of type 'integer'"):
        check_config(config)


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_a_number_must_be_finite(config, value):
    """`.inf` passed `exclusiveMinimum: 0` and `.nan` passes every bound."""
    config["wsi"]["tiling"]["target_mpp"] = value
    with pytest.raises(
        ParamsError, match="key 'wsi.tiling.target_mpp': .* is not of type 'number'"
    ):
        check_config(config)


def alias_bomb(levels: int = 12, width: int = 9) -> str:
    """A "billion laughs" YAML mapping: each anchor lists the previous one `width` times, so the
    last one expands to width**levels strings (9**12, about 3e11: hours of walking and far more
    memory than the machine has), while it parses as a few hundred characters of shared
    nodes."""
    lines = ["bomb:", f"  l0: &l0 [{', '.join(['lol'] * width)}]"]
    for level in range(1, levels):
        lines.append(f"  l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_at_its_first_anchor(tmp_path: Path):
    path = tmp_path / "params.yaml"
    path.write_text((ROOT / "params.yaml").read_text() + alias_bomb())
    line = len((ROOT / "params.yaml").read_text().splitlines()) + 2
    with pytest.raises(
        ParamsError, match=rf"params.yaml, line {line}, column 7: YAML anchor '&l0' is not allowed"
    ):
        load_yaml(path)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("a: &x 1\nb: *x\n", "anchor '&x'"),
        ("a: *x\n", "alias '*x'"),
        ("base: &b {x: 1}\nother: {<<: *b, y: 2}\n", "anchor '&b'"),  # a merge key needs one
    ],
)
def test_anchors_and_aliases_are_refused_with_their_line(tmp_path: Path, text, problem):
    path = tmp_path / "p.yaml"
    path.write_text(text)
    where = rf"^{re.escape(str(path))}, line 1, column \d+: "
    with pytest.raises(ParamsError, match=where + re.escape(f"YAML {problem} is not allowed")):
        load_yaml(path)


@pytest.mark.parametrize("tag", ["!!python/object/apply:os.system", "!!binary", "!custom"])
def test_a_yaml_tag_is_refused_on_one_line_naming_the_file(tmp_path: Path, tag):
    path = tmp_path / "p.yaml"
    path.write_text(f"threads: 1\nstudies: {tag} [echo hi]\n")
    with pytest.raises(ParamsError) as caught:
        load_yaml(path)
    message = str(caught.value)
    assert message.startswith(f"{path}, line 2, column 10: YAML tag '{tag}' is not allowed")
    assert "\n" not in message


def test_a_yaml_syntax_error_is_one_line_naming_file_line_and_problem(tmp_path: Path):
    path = tmp_path / "p.yaml"
    path.write_text("seeds: [0, 1\nthreads: 1\n")
    with pytest.raises(ParamsError) as caught:
        load_yaml(path)
    assert str(caught.value) == (
        f"{path}, line 2, column 8: while parsing a flow sequence: expected ',' or ']', but got ':'"
    )


def test_a_yte_template_is_refused(tmp_path: Path):
    path = tmp_path / "p.yaml"
    path.write_text("__use_yte__: true\nthreads: ?__import__('os').cpu_count()\n")
    with pytest.raises(
        ParamsError, match=r"top-level key '__use_yte__'.*do not use yte.*trusted like code"
    ):
        load_yaml(path)


def test_the_workflow_rereads_its_config_files_as_params_check_does(tmp_path: Path):
    check_config_files([ROOT / "params.yaml"])
    override = tmp_path / "override.yaml"
    override.write_text("seeds: &s [0, 1]\ntuning_seeds: [1000]\n")
    with pytest.raises(ParamsError, match=r"override.yaml, line 1, column 8: YAML anchor '&s'"):
        check_config_files([ROOT / "params.yaml", override])


def test_dataclass_values_name_missing_and_unknown_keys():
    @dataclasses.dataclass(frozen=True)
    class Spec:
        rate: float
        steps: int
        label: str

    assert dataclass_values(Spec, {"rate": 0.5, "steps": 2}, "x.spec", exclude=("label",)) == {
        "rate": 0.5,
        "steps": 2,
    }
    with pytest.raises(KeyError, match=r"x\.spec: missing key\(s\) \['steps'\]"):
        dataclass_values(Spec, {"rate": 0.5}, "x.spec", exclude=("label",))
    with pytest.raises(ValueError, match=r"x\.spec: unknown key\(s\) \['label'\]"):
        dataclass_values(Spec, {"rate": 0.5, "steps": 2, "label": "a"}, "x.spec", ("label",))
