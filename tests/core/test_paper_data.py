from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reprolab.core.paper_data import (
    MANIFEST,
    WSI_ENCODER,
    PaperDataError,
    declared_inputs,
    input_table,
    inputs_of,
    is_present,
    missing_report,
)
from reprolab.core.params import load_yaml
from tests.conftest import ROOT, touch_paper_inputs


def committed(scale: str = "paper") -> dict[str, Any]:
    """The committed params.yaml at `scale`."""
    return {**load_yaml(ROOT / "params.yaml"), "scale": scale}


def named_paths(values: Any) -> Iterator[str]:
    """Every string in `values` (mappings and lists, recursively) that names a path."""
    if isinstance(values, dict):
        for value in values.values():
            yield from named_paths(value)
    elif isinstance(values, list):
        for value in values:
            yield from named_paths(value)
    elif isinstance(values, str) and "/" in values:
        yield values


def paper_roots(config: dict[str, Any]) -> set[str]:
    """Every path the `paper` overrides of params.yaml name, top level and per section."""
    overrides = [config.get("scales", {}).get("paper", {})]
    overrides += [
        section["scales"].get("paper", {})
        for section in config.values()
        if isinstance(section, dict) and isinstance(section.get("scales"), dict)
    ]
    return {path for values in overrides for path in named_paths(values)}


def undeclared_roots(config: dict[str, Any]) -> list[str]:
    """The paper roots no declared input lies in (or is)."""
    declared = [item.path for item in declared_inputs({**config, "scale": "paper"})]
    return sorted(
        root
        for root in paper_roots(config)
        if not any(path == root or path.startswith(f"{root.rstrip('/')}/") for path in declared)
    )


def test_every_paper_root_in_params_is_declared():
    config = committed()
    roots = paper_roots(config)
    assert {"data/raw/cifar-10-batches-py", "models/llava-1.5-7b-hf", "data/raw/coin"} <= roots
    assert undeclared_roots(config) == []


def test_a_new_paper_root_without_a_declaration_is_caught():
    config = committed()
    paper = config["visual_queries"]["scales"]["paper"]
    paper["annotations"] = "data/raw/clevrer/annotations"
    assert undeclared_roots(config) == ["data/raw/clevrer/annotations"]


@pytest.mark.parametrize("scale", ["smoke", "ci"])
def test_smoke_and_ci_declare_nothing(scale: str):
    assert declared_inputs(committed(scale)) == []


def test_inputs_are_the_files_the_loaders_open():
    paths = {item.path for item in declared_inputs(committed())}
    assert {
        *(f"data/raw/cifar-10-batches-py/data_batch_{i}" for i in range(1, 6)),
        "data/raw/cifar-10-batches-py/test_batch",
        "data/raw/cifar-100-python/train",
        "data/raw/cifar-100-python/test",
        "data/raw/svhn/train_32x32.mat",
        "data/raw/svhn/test_32x32.mat",
        f"data/raw/camelyon16/images/{MANIFEST}",
        f"data/raw/tcga_nsclc/slides/{MANIFEST}",
        "data/raw/camelyon16/labels.csv",
        "data/raw/tcga_nsclc/labels.csv",
        "models/resnet50/config.json",
        f"data/raw/clevrer/video_validation/{MANIFEST}",
        f"data/raw/something-something-v2/videos/{MANIFEST}",
        f"data/raw/clevrer/annotation_validation/{MANIFEST}",
        "data/raw/something-something-v2/labels/something-something-v2-labels.json",
        "data/raw/something-something-v2/labels/something-something-v2-validation.json",
        "data/raw/coin/stream.yaml",
        "models/llava-1.5-7b-hf/config.json",
        f"data/raw/kinetics400/videos/{MANIFEST}",
        "models/clip-vit-base-patch16/config.json",
        "data/raw/something-something-v2/strap_labels.csv",
        "data/raw/kinetics400/strap_labels.csv",
        "data/raw/hiccr/ViRL39K/39Krelease.parquet",
        "data/raw/hiccr/MathVista/testmini.parquet",
        "models/vit-base-patch16-224-in21k/config.json",
        "data/raw/cifar-100-python/meta",
        f"data/raw/imagenet-r/{MANIFEST}",
        f"data/raw/cub/{MANIFEST}",
        f"data/raw/vtab/{MANIFEST}",
        "data/raw/naturalproofs/naturalproofs_proofwiki.json",
        "data/raw/counterfact/counterfact.json",
        "models/gpt2-xl/config.json",
        "data/raw/wikitext/wikitext-103-train.txt",
        *(
            f"models/{name}/config.json"
            for name in (
                "Qwen2.5-Math-7B-Instruct",
                "Qwen3-8B",
                "Qwen3-32B",
                "DeepSeek-R1-Distill-Qwen-32B",
                "Llama-3.1-70B-Instruct",
                "gpt-oss-20b",
                "Qwen3-235B-A22B-Instruct-2507",
                "Llama-3.1-8B-Instruct",
                "Qwen2.5-7B-Instruct",
            )
        ),
        "data/raw/glue/SST-2/train.tsv",
        "data/raw/glue/SST-2/dev.tsv",
        "data/raw/agnews/train.csv",
        "data/raw/agnews/test.csv",
        "data/raw/trec/train_5500.label",
        "data/raw/trec/TREC_10.label",
        f"data/raw/fineweb_edu/sample/10BT/{MANIFEST}",
        f"data/raw/navsim/trainval_logs/{MANIFEST}",
        f"data/raw/navsim/test_logs/{MANIFEST}",
        *(
            f"data/raw/normlift/scannet/{scene}/{MANIFEST}"
            for scene in (
                "scene0011_00",
                "scene0050_00",
                "scene0231_00",
                "scene0378_00",
                "scene0518_00",
                "scene0000_00",
                "scene0001_00",
            )
        ),
    } == paths


def test_paths_follow_the_params():
    config = committed()
    config["ndfa"]["scales"]["paper"]["tasks"]["cifar10"]["root"] = "/datasets/cifar10"
    paths = inputs_of(declared_inputs(config), "ndfa", "cifar10")
    assert paths[-1] == "/datasets/cifar10/test_batch" and len(paths) == 6
    cifar = next(i for i in declared_inputs(config) if i.key == "cifar10")
    assert "tar xz -C /datasets/cifar10" in cifar.source.commands[0]


def test_a_job_gets_its_entrys_inputs_and_its_owners_shared_ones():
    inputs = declared_inputs(committed())
    assert inputs_of(inputs, "wsi", "camelyon16") == [f"data/raw/camelyon16/images/{MANIFEST}"]
    assert inputs_of(inputs, "wsi", "camelyon16", WSI_ENCODER) == [
        f"data/raw/camelyon16/images/{MANIFEST}",
        "models/resnet50/config.json",
    ]
    assert inputs_of(inputs, "nicer") == ["data/raw/camelyon16/labels.csv"]
    assert inputs_of(inputs, "visual_queries", "tinyvlm") == []
    assert inputs_of(inputs, "visual_queries", "hf_vlm") == ["models/llava-1.5-7b-hf/config.json"]
    assert inputs_of(inputs, "visual_queries", "clevrer") == [
        f"data/raw/clevrer/annotation_validation/{MANIFEST}"
    ]
    assert inputs_of(inputs, "vngct") == [
        "models/llava-1.5-7b-hf/config.json",
        "data/raw/coin/stream.yaml",
    ]
    assert inputs_of(inputs, "pem") == []
    assert inputs_of(inputs, "proofrank", "corpus") == [
        "data/raw/naturalproofs/naturalproofs_proofwiki.json"
    ]
    assert inputs_of(inputs, "proofrank", "judge", "qwen3-8b") == [
        "models/Qwen3-235B-A22B-Instruct-2507/config.json",
        "models/Qwen3-8B/config.json",
    ]
    assert inputs_of(inputs, "nas") == [
        "data/raw/counterfact/counterfact.json",
        "models/gpt2-xl/config.json",
        "data/raw/wikitext/wikitext-103-train.txt",
    ]
    assert inputs_of(inputs, "norm_enforcement") == ["models/Llama-3.1-8B-Instruct/config.json"]


def test_a_zsre_stream_on_llama_is_declared_by_its_own_sources():
    config = committed()
    paper = config["nas"]["scales"]["paper"]
    paper["model"] = "/models/Meta-Llama-3-8B"
    paper["stream"] = {**paper["stream"], "source": "zsre", "file": "/edits/zsre_mend_eval.json"}
    inputs = [i for i in declared_inputs(config) if i.owner == "nas"]
    assert [i.path for i in inputs][:2] == [
        "/edits/zsre_mend_eval.json",
        "/models/Meta-Llama-3-8B/config.json",
    ]
    assert "zsre_mend_eval.json" in inputs[0].source.commands[0]
    assert inputs[1].source.description.startswith("meta-llama/Meta-Llama-3-8B")


def test_a_nas_file_without_a_recorded_source_is_refused():
    config = committed()
    config["nas"]["scales"]["paper"]["stream"]["file"] = "data/raw/edits/mquake.json"
    with pytest.raises(PaperDataError, match=r"'nas\.stream\.file'.*EDIT_SOURCES"):
        declared_inputs(config)


def test_data_without_a_recorded_source_is_refused():
    config = committed()
    cohorts = config["wsi"]["scales"]["paper"]["cohorts"]
    cohorts["panda"] = {"slides": "data/raw/panda/slides"}
    with pytest.raises(PaperDataError, match=r"'wsi\.cohorts\.panda\.slides'.*FOLDER_SOURCES"):
        declared_inputs(config)


def test_missing_report_names_every_missing_input_with_how_to_get_it(tmp_path: Path):
    inputs = declared_inputs(committed())
    report = missing_report(inputs, tmp_path)
    paths = {item.path for item in inputs}
    assert f"{len(paths)} of {len(paths)} declared inputs" in report
    assert all(f"MISSING  {path}\n" in report for path in paths)
    assert "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz" in report
    assert "reprolab data-check --scale paper" in report
    # a checkpoint two studies read is listed once, with both
    assert report.count("MISSING  models/llava-1.5-7b-hf/config.json\n") == 1
    assert "visual_queries, vngct" in report


def test_nothing_is_reported_once_the_files_exist(tmp_path: Path):
    config = committed()
    (tmp_path / "params.yaml").write_text((ROOT / "params.yaml").read_text())
    touch_paper_inputs(tmp_path)
    inputs = declared_inputs(config)
    assert all(is_present(item, tmp_path) for item in inputs)
    assert missing_report(inputs, tmp_path) == ""
    assert "MISSING" not in input_table(inputs, tmp_path)


def test_one_missing_file_is_reported_alone(tmp_path: Path):
    (tmp_path / "params.yaml").write_text((ROOT / "params.yaml").read_text())
    touched = touch_paper_inputs(tmp_path)
    (tmp_path / "data/raw/svhn/test_32x32.mat").unlink()
    report = missing_report(declared_inputs(committed()), tmp_path)
    assert f"1 of {len(touched)} declared inputs" in report
    assert "MISSING  data/raw/svhn/test_32x32.mat\n" in report
    assert "MISSING  data/raw/svhn/train_32x32.mat" not in report
