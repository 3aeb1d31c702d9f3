import yaml

from reprolab import dvc_export
from reprolab.core.params import load_yaml
from tests.conftest import ROOT


def test_committed_dvc_yaml_matches_a_fresh_export():
    fresh = dvc_export.render(load_yaml(ROOT / "params.yaml"), ROOT)
    assert (ROOT / "dvc.yaml").read_text() == fresh, "dvc.yaml is stale: run `reprolab dvc-export`"


def test_stage_covers_code_params_and_contract_outputs():
    stages = yaml.safe_load(dvc_export.render(load_yaml(ROOT / "params.yaml"), ROOT))["stages"]
    ndfa = stages["ndfa"]
    assert ndfa["cmd"] == "snakemake --cores all ndfa"
    assert "workflow/scripts/ndfa_train.py" in ndfa["deps"]
    assert "workflow/notebooks/ndfa.ipynb" in ndfa["deps"]
    # The shared tail's rules and scripts, and the design notes shown in the report.
    for dep in ("workflow/rules/tail.smk", "workflow/scripts/summarize.py", "docs/studies/ndfa.md"):
        assert dep in ndfa["deps"], dep
    assert {"scale", "seeds", "ndfa"} <= set(ndfa["params"])
    assert "data/ndfa" in ndfa["outs"] and "results/ndfa/report.html" in ndfa["outs"]
    assert "requirements.lock" in ndfa["deps"] and ndfa["desc"].startswith("ndfa: ")
    # The small result files are committed to git, so a clone can show and diff them.
    assert {"results/ndfa/claims.json": {"cache": False}} in ndfa["outs"]
    assert ndfa["metrics"] == [{"results/ndfa/metrics.json": {"cache": False}}]
    assert "results/ndfa/table.csv" in stages["index"]["deps"]


def test_index_depends_on_every_module_its_script_imports():
    stages = yaml.safe_load(dvc_export.render(load_yaml(ROOT / "params.yaml"), ROOT))["stages"]
    deps = stages["index"]["deps"]
    for module in ("core/index.py", "core/io.py", "core/layout.py", "core/progress.py"):
        assert f"src/reprolab/{module}" in deps, module
    assert "src/reprolab/core/tables.py" not in deps
    assert "src/reprolab/papers.yaml" in deps


def test_every_study_has_a_curves_plot():
    document = yaml.safe_load(dvc_export.render(load_yaml(ROOT / "params.yaml"), ROOT))
    plots = {name: spec for entry in document["plots"] for name, spec in entry.items()}
    assert plots["ndfa_curves"]["y"] == {"results/ndfa/curves.csv": "y"}
    assert plots["ndfa_curves"]["template"] == "series"
    assert (ROOT / ".dvc/plots/series.json").is_file()


def test_a_study_that_reads_slides_depends_on_the_wsi_stage():
    stages = yaml.safe_load(dvc_export.render(load_yaml(ROOT / "params.yaml"), ROOT))["stages"]
    wsi = stages["wsi"]
    assert wsi["cmd"] == "snakemake --cores all wsi"
    assert "src/reprolab/preprocess/wsi" in wsi["deps"] and "wsi" in wsi["params"]
    assert wsi["outs"] == ["data/raw/wsi", "data/wsi"]
    assert "data/wsi" in stages["ssg"]["deps"] and "data/wsi" not in stages["ndfa"]["deps"]
    assert list(stages).index("wsi") < list(stages).index("ssg")


def test_a_study_that_reads_videos_depends_on_the_video_stage_and_its_raw_truth():
    stages = yaml.safe_load(dvc_export.render(load_yaml("params.yaml")))["stages"]
    video = stages["video"]
    assert video["cmd"] == "snakemake --cores all video"
    assert video["outs"] == ["data/raw/video", "data/video"]
    deps = stages["visual_queries"]["deps"]
    assert "data/video" in deps and "data/raw/video" in deps and "data/wsi" not in deps
    assert stages["visual_queries"]["outs"][0] == "data/visual_queries"
    assert list(stages).index("video") < list(stages).index("visual_queries")


def test_a_study_depends_on_the_shared_packages_it_imports(tmp_path):
    package = tmp_path / "study"
    (package / "sub").mkdir(parents=True)
    (package / "a.py").write_text("from reprolab.models.lora import LoRA\nimport numpy\n")
    (package / "sub" / "b.py").write_text(
        "import reprolab.preprocess.instr.stream\n# reprolab.preprocess.wsi in a comment\n"
    )
    assert dvc_export.library_packages(package) == [
        "src/reprolab/models",
        "src/reprolab/preprocess/instr",
    ]
    stages = yaml.safe_load(dvc_export.render(load_yaml(ROOT / "params.yaml"), ROOT))["stages"]
    assert "src/reprolab/models" in stages["vngct"]["deps"]
    assert "src/reprolab/models" not in stages["ndfa"]["deps"]
