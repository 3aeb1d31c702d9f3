"""The paper-scale datasets and checkpoints, as files the workflow declares as inputs.

At paper scale params.yaml names real data (`root:`, `slides:`, `videos:`, `stream:`, `labels:`,
`real_items:`, a checkpoint's `path:` or `checkpoint:`). `declared_inputs` says, per study or
preprocessing family, which files there its jobs need, each with what it is and how to obtain
it. The choice of file: one the loader opens (CIFAR's pickles, SVHN's .mat files, a stream's
stream.yaml, a labels CSV or annotation file, a checkpoint's config.json); where a folder holds
many files with no fixed name (slides, videos, CLEVRER's annotations), a manifest of them
(`MANIFEST.tsv`, written once with the command given), which also makes Snakemake rerun the
folder's jobs when its files change. Paths come from the params, so moving a dataset is a params
change only.

The rules add these files to their `input:` through `paper_inputs` in workflow/rules/common.smk,
so a dry run without the data stops and names them; `reprolab data-check` lists them. At smoke
and ci scale the data is generated or bundled with a library: nothing is declared.

A new kind of paper-scale data is declared by adding its source to a table below (or a
function to DECLARATIONS); params that name data this module has no source for are refused.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from reprolab.core.layout import known_families
from reprolab.core.params import ParamsError, study_params
from reprolab.studies.ndfa.formats import CIFAR_FILES, SVHN_FILES

MANIFEST = "MANIFEST.tsv"
"""The manifest of a folder of slides or videos: one `name<TAB>bytes` line per file."""


class PaperDataError(ParamsError):
    """The params name paper-scale data this module records no source for."""


@dataclass(frozen=True)
class Source:
    """What a dataset or checkpoint is and how to obtain it: `obtain` in words, `commands` to
    run as they are. Both may name `{folder}` (the folder the params give it) and `commands`
    `{manifest}` (the command that writes the folder's manifest)."""

    description: str
    obtain: str = ""
    commands: tuple[str, ...] = ()

    def filled(self, folder: str) -> Source:
        """This source with `{folder}` and `{manifest}` filled in for `folder`."""
        manifest = MANIFEST_COMMAND.format(folder=folder, manifest=MANIFEST)
        fill = {"folder": folder, "manifest": manifest}
        return Source(
            self.description,
            self.obtain.format(**fill),
            tuple(command.format(**fill) for command in self.commands),
        )


@dataclass(frozen=True)
class PaperInput:
    """One file a paper-scale job reads (or a folder's manifest), and where it comes from.

    `owner` is the study or preprocessing family whose jobs read it; `key` the entry (task,
    cohort, dataset, stream or method) whose jobs read it, None when every job of the owner
    does.
    """

    owner: str
    key: str | None
    path: str
    source: Source


MANIFEST_COMMAND = (
    "(cd {folder} && find . -maxdepth 1 -type f ! -name {manifest} -printf '%f\\t%s\\n' "
    "| sort > {manifest})"
)
"""Writes a folder's manifest: the name and size of every file in it, sorted."""

NDFA_SOURCES: dict[str, tuple[tuple[str, ...], Source]] = {
    "cifar10": (
        (*CIFAR_FILES["cifar10"][0], CIFAR_FILES["cifar10"][1]),
        Source(
            "CIFAR-10, python version (Krizhevsky 2009)",
            commands=(
                "mkdir -p {folder} && curl -L https://www.cs.toronto.edu/~kriz/"
                "cifar-10-python.tar.gz | tar xz -C {folder} --strip-components=1",
            ),
        ),
    ),
    "cifar100": (
        (*CIFAR_FILES["cifar100"][0], CIFAR_FILES["cifar100"][1]),
        Source(
            "CIFAR-100, python version (Krizhevsky 2009)",
            commands=(
                "mkdir -p {folder} && curl -L https://www.cs.toronto.edu/~kriz/"
                "cifar-100-python.tar.gz | tar xz -C {folder} --strip-components=1",
            ),
        ),
    ),
    "svhn": (
        SVHN_FILES,
        Source(
            "SVHN, cropped digits (format 2; for non-commercial use only)",
            commands=tuple(
                f"curl -L --create-dirs -o {{folder}}/{name} "
                f"http://ufldl.stanford.edu/housenumbers/{name}"
                for name in SVHN_FILES
            ),
        ),
    ),
}
"""ndfa's datasets (a task's `dataset`): the files its loader (studies.ndfa.formats) opens."""

FOLDER_SOURCES: dict[tuple[str, str], Source] = {
    ("wsi", "camelyon16"): Source(
        "CAMELYON16 slides: the 399 .tif slides (CC0)",
        "Download training/normal, training/tumor and testing/images from "
        "https://camelyon16.grand-challenge.org/Data/ into {folder}, then write the manifest:",
        ("{manifest}",),
    ),
    ("wsi", "tcga_nsclc"): Source(
        "TCGA-NSCLC slides: TCGA-LUAD and TCGA-LUSC diagnostic .svs (open access)",
        "Add both projects' 'Diagnostic Slide' files to a cart on https://portal.gdc.cancer.gov/, "
        "fetch them with `gdc-client download -m <the cart's manifest>`, move the .svs files "
        "into {folder}, then write the manifest:",
        ("{manifest}",),
    ),
    ("video", "clevrer"): Source(
        "CLEVRER validation videos (CC0)",
        "Download video_validation.zip from http://clevrer.csail.mit.edu/ and put its .mp4 "
        "files directly in {folder} (the frames stage does not read subfolders), then write the "
        "manifest:",
        ("{manifest}",),
    ),
    ("video", "ssv2"): Source(
        "Something-Something v2 videos (licence agreement with Qualcomm)",
        "Register and download at https://developer.qualcomm.com/software/ai-datasets/"
        "something-something; put the videos in {folder} as .mp4 (they ship as .webm: convert "
        "them, or add .webm to video.frames.extensions), then write the manifest:",
        ("{manifest}",),
    ),
    ("video", "kinetics400"): Source(
        "Kinetics-400 videos (YouTube clips; CC BY 4.0 annotations)",
        "Download with https://github.com/cvdfoundation/kinetics-dataset (k400 train and val), "
        "put the .mp4 files directly in {folder}, then write the manifest:",
        ("{manifest}",),
    ),
}
"""Folders of many files (a wsi cohort's slides, a video dataset's videos), by (family, entry)."""

STREAM_SOURCES: dict[str, Source] = {
    "coin": Source(
        "CoIN instruction stream: the eight tasks' JSON files, their images and a stream.yaml",
        "Download the instructions from https://huggingface.co/datasets/Zacks-Chen/CoIN and the "
        "images its README (https://github.com/zackschen/CoIN) lists into {folder}, write "
        "{folder}/stream.yaml naming the eight tasks (README.md, Instruction streams), then "
        "check it:",
        ("reprolab streams check {folder}/stream.yaml",),
    ),
}
"""instr streams read from a folder (an `instr.streams` entry with `stream:`), by name."""

LABEL_SOURCES: dict[str, Source] = {
    "camelyon16": Source(
        "CAMELYON16 slide labels: a CSV with columns slide,label (1 = metastases)",
        "Write it from the slide names (normal_* 0, tumor_* 1) and, for test_*, from "
        "CAMELYON16's testing/reference.csv (Tumor 1, Normal 0)",
    ),
    "tcga_nsclc": Source(
        "TCGA-NSCLC slide labels: a CSV with columns slide,label (0 = LUAD, 1 = LUSC)",
        "Write it from each slide's GDC project (TCGA-LUAD 0, TCGA-LUSC 1), e.g. from the "
        "sample sheet the GDC portal exports with the cart",
    ),
}
"""The labels CSV of a real wsi cohort (ssg's dataset or nicer's `labels:`), by cohort."""

CLIP_LABEL_SOURCES: dict[str, Source] = {
    "ssv2": Source(
        "Something-Something v2 clip labels for strap: a CSV with columns video,split,label",
        "Write it from the labels archive of https://developer.qualcomm.com/software/"
        "ai-datasets/something-something: one row per video id of "
        "something-something-v2-train.json (split train) and -validation.json (split test), "
        "label = the template's index in something-something-v2-labels.json",
    ),
    "kinetics400": Source(
        "Kinetics-400 clip labels for strap: a CSV with columns video,split,label",
        "Write it from the kinetics-dataset annotations (train.csv as split train, val.csv as "
        "split test): video = youtube_id_<start>_<end> as the files are named, label = the "
        "class's index in the sorted list of the 400 class names",
    ),
}
"""strap's labels CSV of a real video dataset (a task's `labels:`), by video dataset."""

CHECKPOINT_SOURCES: dict[str, Source] = {
    "llava-1.5-7b-hf": Source(
        "LLaVA-1.5-7B with its processor, saved locally (Llama 2 Community Licence)",
        "On a machine with network access:",
        (
            'python -c "from transformers import AutoProcessor, LlavaForConditionalGeneration '
            "as M; r = 'llava-hf/llava-1.5-7b-hf'; M.from_pretrained(r).save_pretrained"
            "('{folder}'); AutoProcessor.from_pretrained(r).save_pretrained('{folder}')\"",
        ),
    ),
    "clip-vit-base-patch16": Source(
        "CLIP ViT-B/16's vision tower, saved locally (MIT licence)",
        "On a machine with network access:",
        (
            'python -c "from transformers import CLIPVisionModel; '
            "CLIPVisionModel.from_pretrained('openai/clip-vit-base-patch16')"
            ".save_pretrained('{folder}')\"",
        ),
    ),
    "vit-base-patch16-224-in21k": Source(
        "ViT-B/16 pre-trained on ImageNet-21k, saved locally (Apache-2.0)",
        "On a machine with network access:",
        (
            'python -c "from transformers import ViTModel; '
            "ViTModel.from_pretrained('google/vit-base-patch16-224-in21k', "
            "add_pooling_layer=False).save_pretrained('{folder}')\"",
        ),
    ),
    "resnet50": Source(
        "ResNet-50 (ImageNet) tile encoder with its image processor, saved locally (Apache-2.0)",
        "On a machine with network access:",
        (
            'python -c "from transformers import AutoImageProcessor, AutoModel; '
            "r = 'microsoft/resnet-50'; AutoModel.from_pretrained(r).save_pretrained('{folder}'); "
            "AutoImageProcessor.from_pretrained(r).save_pretrained('{folder}')\"",
        ),
    ),
    **{
        Path(repo).name: Source(
            f"{repo} with its tokenizer and chat template, saved locally ({licence})",
            "On a machine with network access:",
            (
                'python -c "from transformers import AutoModelForCausalLM, AutoTokenizer; '
                f"r = '{repo}'; AutoModelForCausalLM.from_pretrained(r).save_pretrained"
                "('{folder}'); AutoTokenizer.from_pretrained(r).save_pretrained('{folder}')\"",
            ),
        )
        for repo, licence in (
            ("Qwen/Qwen2.5-Math-7B-Instruct", "Apache-2.0"),
            ("Qwen/Qwen3-8B", "Apache-2.0"),
            ("Qwen/Qwen3-32B", "Apache-2.0"),
            ("Qwen/Qwen3-235B-A22B-Instruct-2507", "Apache-2.0"),
            ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "MIT"),
            ("meta-llama/Llama-3.1-70B-Instruct", "Llama 3.1 Community Licence"),
            ("openai/gpt-oss-20b", "Apache-2.0"),
            ("openai-community/gpt2-xl", "MIT"),
            ("EleutherAI/gpt-j-6b", "Apache-2.0"),
            ("meta-llama/Meta-Llama-3-8B", "Llama 3 Community Licence"),
            ("meta-llama/Llama-3.1-8B-Instruct", "Llama 3.1 Community Licence"),
            ("Qwen/Qwen2.5-7B-Instruct", "Apache-2.0"),
        )
    },
}
"""Local `transformers` checkpoint folders, by folder name; the marker is their config.json.
The causal LMs are proofrank's generators and judge (the design card's list), the models
nas edits (MEMIT's GPT-2 XL and GPT-J, and Llama-3-8B) and overcorrection's readers."""

REAL_ITEM_SOURCES: dict[tuple[str, str], Source] = {
    ("clevrer", "annotations"): Source(
        "CLEVRER validation annotations: annotation_<n>.json files, at any depth (CC0)",
        "Download annotation_validation.zip from http://clevrer.csail.mit.edu/ and unzip it as "
        "{folder}, then write the manifest:",
        (
            "(cd {folder} && find . -type f -name 'annotation_*.json' -printf '%P\\t%s\\n' "
            f"| sort > {MANIFEST})",
        ),
    ),
    ("ssv2", "labels"): Source(
        "Something-Something v2 labels: the 174 action templates (licence agreement with Qualcomm)",
        "From the labels archive of https://developer.qualcomm.com/software/ai-datasets/"
        "something-something, into {folder}",
    ),
    ("ssv2", "split"): Source(
        "Something-Something v2 validation split: each video's template (licence agreement "
        "with Qualcomm)",
        "From the labels archive of https://developer.qualcomm.com/software/ai-datasets/"
        "something-something, into {folder}",
    ),
}
"""visual_queries' annotation files of a real video dataset (`real_items.<dataset>.<key>`)."""

REAL_ITEM_FOLDERS = frozenset({("clevrer", "annotations")})
"""The `real_items` keys that name a folder of many files: declared by its manifest."""

BENCHMARK_SOURCES: dict[str, Source] = {
    "train": Source(
        "ViRL39K: the RL training set of 39k visual reasoning questions (TIGER-Lab; see its card "
        "for the licences of its sources)",
        "Download 39Krelease.parquet and images.zip from "
        "https://huggingface.co/datasets/TIGER-Lab/ViRL39K into {folder} and unzip the images "
        "there (the parquet's image paths start with images/):",
        ("(cd {folder} && unzip -q images.zip)",),
    ),
    "test": Source(
        "MathVista testmini: 1,000 items with embedded images (CC BY-SA 4.0)",
        "Download data/testmini-00000-of-00001-725687bf7a18d64b.parquet from "
        "https://huggingface.co/datasets/AI4Math/MathVista and save it as the file the params "
        "name, in {folder}",
    ),
}
"""hiccr's benchmark files (`hiccr.benchmarks.train`, `.test`), by key."""

CIL_BENCHMARK_SOURCES: dict[str, tuple[tuple[str, ...], Source]] = {
    "cifar100": (
        (*CIFAR_FILES["cifar100"][0], CIFAR_FILES["cifar100"][1], "meta"),
        NDFA_SOURCES["cifar100"][1],
    ),
    **{
        name: (
            (MANIFEST,),
            Source(
                f"{description}, in the train/ and test/ class-folder layout of the "
                "class-incremental PEFT code bases (APER/ADAM, EASE, MoE-Adapters)",
                f"{obtain} Put it in {{folder}} as train/<class>/<image> and "
                "test/<class>/<image>, then write the manifest:",
                (
                    "(cd {folder} && find train test -type f -printf '%p\\t%s\\n' "
                    f"| sort > {MANIFEST})",
                ),
            ),
        )
        for name, description, obtain in (
            (
                "imagenet_r",
                "ImageNet-R: 30,000 renditions of 200 ImageNet classes (MIT licence)",
                "Download imagenet-r.tar from https://github.com/hendrycks/imagenet-r and split "
                "it 80/20 per class as the APER code base does (its split files).",
            ),
            (
                "cub",
                "CUB-200-2011: 11,788 images of 200 bird species (research use)",
                "Download CUB_200_2011.tgz from https://data.caltech.edu/records/65de6-vp158 "
                "and split it by its train_test_split.txt.",
            ),
            (
                "vtab",
                "VTAB, the 50-class five-task subset of the class-incremental PEFT code bases "
                "(resisc45, dtd, pets, eurosat, flowers)",
                "Download the vtab folder the APER code base links "
                "(https://github.com/zhoudw-zdw/RevisitingCIL).",
            ),
        )
    },
}
"""trpr's released benchmarks (`trpr.benchmarks.<name>.root`): the files its loader
(studies.trpr.benchmarks) opens, or the manifest of a class-folder release."""

WSI_ENCODER = "encoder"
"""The key of the wsi tile encoder's checkpoint: read by the features jobs, not the tiling."""


Entry = TypeVar("Entry")


def _source(table: Mapping[Any, Entry], name: Any, where: str, table_name: str) -> Entry:
    """`table[name]`, or a PaperDataError naming the params key `where` and the table to extend."""
    if name not in table:
        raise PaperDataError(
            f"params key '{where}' names paper-scale data '{name}', but "
            f"reprolab.core.paper_data.{table_name} records no source for it: add one there"
        )
    return table[name]


def _declare(owner: str, key: str | None, path: str, source: Source, folder: str) -> PaperInput:
    """A PaperInput whose source is filled in for `folder`."""
    return PaperInput(owner, key, path, source.filled(folder))


def _checkpoint(owner: str, key: str | None, folder: str, where: str) -> PaperInput:
    """A local checkpoint folder, declared by its config.json (what the loaders check first)."""
    source = _source(CHECKPOINT_SOURCES, Path(folder).name, where, "CHECKPOINT_SOURCES")
    return _declare(owner, key, f"{folder}/config.json", source, folder)


def _stream(owner: str, key: str | None, name: str, folder: str, where: str) -> PaperInput:
    """An instruction stream folder, declared by the stream.yaml its loader opens."""
    source = _source(STREAM_SOURCES, name, where, "STREAM_SOURCES")
    return _declare(owner, key, f"{folder}/stream.yaml", source, folder)


def _ndfa(values: Mapping[str, Any], config: Mapping[str, Any]) -> Iterator[PaperInput]:
    """Per task with a `root`: every file its dataset's loader opens there."""
    for task, spec in values["tasks"].items():
        if "root" in spec:
            where = f"ndfa.tasks.{task}.root"
            files, source = _source(NDFA_SOURCES, spec["dataset"], where, "NDFA_SOURCES")
            for name in files:
                yield _declare("ndfa", task, f"{spec['root']}/{name}", source, spec["root"])


def _folders(
    family: str, values: Mapping[str, Any], entries: str, kind: str
) -> Iterator[PaperInput]:
    """Per entry of `values[entries]` naming a folder under `kind` (`slides`, `videos`): the
    folder's manifest."""
    for name, spec in values[entries].items():
        if kind in spec:
            where = f"{family}.{entries}.{name}.{kind}"
            source = _source(FOLDER_SOURCES, (family, name), where, "FOLDER_SOURCES")
            yield _declare(family, name, f"{spec[kind]}/{MANIFEST}", source, spec[kind])


def _wsi(values: Mapping[str, Any], config: Mapping[str, Any]) -> Iterator[PaperInput]:
    """Each real cohort's slides; the tile encoder's checkpoint when it is a local folder."""
    yield from _folders("wsi", values, "cohorts", "slides")
    encoder = values["features"]["encoder"]
    if encoder["kind"] == "hf_local":
        yield _checkpoint("wsi", WSI_ENCODER, encoder["path"], "wsi.features.encoder.path")


def _video(values: Mapping[str, Any], config: Mapping[str, Any]) -> Iterator[PaperInput]:
    """Each real dataset's videos."""
    yield from _folders("video", values, "datasets", "videos")


def _instr(values: Mapping[str, Any], config: Mapping[str, Any]) -> Iterator[PaperInput]:
    """Each stream read from a folder."""
    for name, spec in values["streams"].items():
        if "stream" in spec:
            yield _stream("instr", name, name, spec["stream"], f"instr.streams.{name}.stream")


def _slide_labels(owner: str, key: str | None, spec: Mapping[str, Any], where: str) -> PaperInput:
    """The labels CSV of a real wsi cohort a study reads (its tile features are the wsi
    family's outputs)."""
    source = _source(LABEL_SOURCES, spec["cohort"], where, "LABEL_SOURCES")
    return _declare(owner, key, spec["labels"], source, str(Path(spec["labels"]).parent))


def _ssg(values: Mapping[str, Any], config: Mapping[str, Any]) -> Iterator[PaperInput]:
    """Each real wsi dataset's labels CSV."""
    for name, spec in values["datasets"].items():
        if spec.get("generator") == "wsi" and spec.get("labels"):
            yield _slide_labels("ssg", name, spec, f"ssg.datasets.{name}.labels")


def _nicer(values: Mapping[str, Any], config: Mapping[str, Any]) -> Iterator[PaperInput]:
    """The labels CSV of the cohort when it is a real one."""
    if values["dataset"].get("labels"):
        yield _slide_labels("nicer", None, values["dataset"], "nicer.dataset.labels")


def _visual_queries(values: Mapping[str, Any], config: Mapping[str, Any]) -> Iterator[PaperInput]:
    """The local VLM of the `hf_vlm` method, when it is run (key `hf_vlm`); per real dataset
    (key: its `real_items` entry) the annotation files its items are made from."""
    if "hf_vlm" in values["methods"]:
        path = values["hf_vlm"]["path"]
        yield _checkpoint("visual_queries", "hf_vlm", path, "visual_queries.hf_vlm.path")
    for dataset, spec in values.get("real_items", {}).items():
        for key, value in spec.items():
            if not isinstance(value, str):
                continue  # a setting (the CLEVRER floor), not a path
            where = f"visual_queries.real_items.{dataset}.{key}"
            source = _source(REAL_ITEM_SOURCES, (dataset, key), where, "REAL_ITEM_SOURCES")
            if (dataset, key) in REAL_ITEM_FOLDERS:
                yield _declare("visual_queries", dataset, f"{value}/{MANIFEST}", source, value)
            else:
                yield _declare("visual_queries", dataset, value, source, str(Path(value).parent))


def _vngct(values: Mapping[str, Any], config: Mapping[str, Any]) -> Iterator[PaperInput]:
    """The local checkpoint every run starts from, and the stream when it is a real folder (its
    jobs read the records themselves, beside the instr family's check)."""
    if values["checkpoint"]:
        yield _checkpoint("vngct", None, values["checkpoint"], "vngct.checkpoint")
    name = values["stream"]
    spec = study_params(config, "instr")["streams"][name]
    if "stream" in spec:
        yield _stream("vngct", None, name, spec["stream"], f"instr.streams.{name}.stream")


def _strap(values: Mapping[str, Any], config: Mapping[str, Any]) -> Iterator[PaperInput]:
    """The backbone checkpoint when it is a saved folder; each task's labels CSV (its clips
    are the video family's outputs)."""
    if values["backbone"]["checkpoint"]:
        where = "strap.backbone.checkpoint"
        yield _checkpoint("strap", None, values["backbone"]["checkpoint"], where)
    for task, spec in values["tasks"].items():
        if spec.get("labels"):
            where = f"strap.tasks.{task}.labels"
            source = _source(CLIP_LABEL_SOURCES, spec["dataset"], where, "CLIP_LABEL_SOURCES")
            yield _declare("strap", None, spec["labels"], source, str(Path(spec["labels"]).parent))


def _hiccr(values: Mapping[str, Any], config: Mapping[str, Any]) -> Iterator[PaperInput]:
    """With released data (`benchmarks`): the checkpoint RL starts from and the training and
    test files."""
    if "benchmarks" not in values:
        return
    yield _checkpoint("hiccr", None, values["checkpoint"], "hiccr.checkpoint")
    for key, source in BENCHMARK_SOURCES.items():
        path = values["benchmarks"][key]
        yield _declare("hiccr", None, path, source, str(Path(path).parent))


THEOREM_SOURCES: dict[str, Source] = {
    "naturalproofs_proofwiki.json": Source(
        "NaturalProofs, ProofWiki part: theorems with their human proofs (Welleck et al., "
        "NeurIPS 2021 Datasets and Benchmarks; MIT licence, ProofWiki's text CC BY-SA 3.0)",
        "Download naturalproofs_proofwiki.json from the data release linked in the README of "
        "https://github.com/wellecks/naturalproofs into {folder}",
    ),
    "naturalproofs_stacks.json": Source(
        "NaturalProofs, Stacks part: theorems with their human proofs (Welleck et al., NeurIPS "
        "2021 Datasets and Benchmarks; MIT licence, the Stacks project's text GFDL)",
        "Download naturalproofs_stacks.json from the data release linked in the README of "
        "https://github.com/wellecks/naturalproofs into {folder}",
    ),
}
"""proofrank's paper-scale theorem files (`proofrank.corpus.files`), by file name."""

PROOFRANK_CORPUS = "corpus"
"""The key of proofrank's theorem files: read by its data job."""
PROOFRANK_JUDGE = "judge"
"""The key of proofrank's judge checkpoint: read by its run jobs, as is each backend's (keyed
by the backend's name)."""


def _proofrank(values: Mapping[str, Any], config: Mapping[str, Any]) -> Iterator[PaperInput]:
    """The theorem files when the params name some (key PROOFRANK_CORPUS), the judge's folder
    when it is an LM (PROOFRANK_JUDGE) and each local model backend's folder (its name)."""
    for path in values["corpus"]["files"] or []:
        where = "proofrank.corpus.files"
        source = _source(THEOREM_SOURCES, Path(path).name, where, "THEOREM_SOURCES")
        yield _declare("proofrank", PROOFRANK_CORPUS, path, source, str(Path(path).parent))
    if values["judge"]["kind"] == "lm":
        yield _checkpoint(
            "proofrank", PROOFRANK_JUDGE, values["judge"]["folder"], "proofrank.judge.folder"
        )
    for name, spec in values["backends"].items():
        if spec["kind"] == "hf":
            yield _checkpoint(
                "proofrank", name, spec["folder"], f"proofrank.backends.{name}.folder"
            )


EDIT_SOURCES: dict[str, Source] = {
    "counterfact.json": Source(
        "CounterFact: 21,919 counterfactual edit requests with paraphrase and neighbourhood "
        "prompts (Meng et al. 2022, ROME; MIT licence)",
        "On a machine with network access:",
        (
            "curl -L --create-dirs -o {folder}/counterfact.json "
            "https://rome.baulab.info/data/dsets/counterfact.json",
        ),
    ),
    "multi_counterfact.json": Source(
        "MultiCounterFact: CounterFact without requests that conflict in a batch (Meng et al. "
        "2023, MEMIT; MIT licence)",
        "On a machine with network access:",
        (
            "curl -L --create-dirs -o {folder}/multi_counterfact.json "
            "https://memit.baulab.info/data/dsets/multi_counterfact.json",
        ),
    ),
    "zsre_mend_eval.json": Source(
        "zsRE question-answering edits, MEND's evaluation split (Mitchell et al. 2022; MIT "
        "licence)",
        "On a machine with network access:",
        (
            "curl -L --create-dirs -o {folder}/zsre_mend_eval.json "
            "https://rome.baulab.info/data/dsets/zsre_mend_eval.json",
        ),
    ),
}
"""nas's edit request files (`nas.stream.file`), by file name (reprolab.studies.nas.counterfact
reads them)."""

TEXT_SOURCES: dict[str, Source] = {
    "wikitext-103-train.txt": Source(
        "WikiText-103's training text, one paragraph per line (Merity et al. 2016; CC BY-SA)",
        "On a machine with network access, write the non-empty lines of the `train` split of "
        "Salesforce/wikitext (wikitext-103-raw-v1) on the Hugging Face Hub, stripped, one per "
        "line, to {folder}/wikitext-103-train.txt (MEMIT's key statistics come from Wikipedia "
        "text too)",
    ),
}
"""nas's generic text files (`nas.texts.file`: the covariance and generic-loss texts)."""


def _nas(values: Mapping[str, Any], config: Mapping[str, Any]) -> Iterator[PaperInput]:
    """With a file stream: the request file, the model folder and the text file (every nas job
    then reads all three; the fact LM's job does not run)."""
    stream = values["stream"]
    if stream["source"] == "world":
        return
    path = stream["file"]
    source = _source(EDIT_SOURCES, Path(path).name, "nas.stream.file", "EDIT_SOURCES")
    yield _declare("nas", None, path, source, str(Path(path).parent))
    yield _checkpoint("nas", None, values["model"], "nas.model")
    path = values["texts"]["file"]
    source = _source(TEXT_SOURCES, Path(path).name, "nas.texts.file", "TEXT_SOURCES")
    yield _declare("nas", None, path, source, str(Path(path).parent))


TEXT_SET_SOURCES: dict[str, Source] = {
    "sst2": Source(
        "GLUE SST-2: train.tsv and dev.tsv, `sentence<TAB>label` with a header (Socher et al. "
        "2013; GLUE's terms)",
        "On a machine with network access, download SST-2.zip from "
        "https://dl.fbaipublicfiles.com/glue/data/SST-2.zip and unzip it so that the files are "
        "in {folder}",
    ),
    "agnews": Source(
        "AG News (Zhang et al. 2015): train.csv and test.csv, `class,title,description`",
        "On a machine with network access, download ag_news_csv.tar.gz, the authors' release "
        "(linked from https://github.com/zhangxiangxiao/Crepe), and unpack train.csv and "
        "test.csv into {folder}",
    ),
    "trec": Source(
        "TREC question classification (Li and Roth 2002): train_5500.label and TREC_10.label",
        "On a machine with network access:",
        (
            "curl -L --create-dirs -o {folder}/train_5500.label "
            "https://cogcomp.seas.upenn.edu/Data/QA/QC/train_5500.label",
            "curl -L --create-dirs -o {folder}/TREC_10.label "
            "https://cogcomp.seas.upenn.edu/Data/QA/QC/TREC_10.label",
        ),
    ),
}
"""overcorrection's classification sets (`overcorrection.sets.<set>.format`): the training and
test files its readers read (reprolab.studies.overcorrection.text_sets)."""


def _overcorrection(values: Mapping[str, Any], config: Mapping[str, Any]) -> Iterator[PaperInput]:
    """Per pretrained reader (keyed by its name): its model folder and its set's two files."""
    for name, spec in values["readers"].items():
        if spec["kind"] != "pretrained":
            continue
        yield _checkpoint("overcorrection", name, spec["folder"], f"overcorrection.readers.{name}")
        files = values["sets"][spec["set"]]
        where = f"overcorrection.sets.{spec['set']}.format"
        source = _source(TEXT_SET_SOURCES, files["format"], where, "TEXT_SET_SOURCES")
        for path in (files["train"], files["test"]):
            yield _declare("overcorrection", name, path, source, str(Path(path).parent))


CORPUS_SOURCES: dict[str, Source] = {
    "10BT": Source(
        "FineWeb-Edu, its 10B-token sample: Parquet shards with a `text` column (ODC-By 1.0)",
        "On a machine with network access, download the shards of sample/10BT from "
        "https://huggingface.co/datasets/HuggingFaceFW/fineweb-edu into {folder}, then write "
        "the manifest:",
        ("{manifest}",),
    ),
}
"""ngpt_fp4's text folders (`ngpt_fp4.corpus.folder`, by the folder's name): read by its
corpus job (reprolab.studies.ngpt_fp4.corpus.corpus_from_folder)."""


def _ngpt_fp4(values: Mapping[str, Any], config: Mapping[str, Any]) -> Iterator[PaperInput]:
    """A text folder's manifest, when the corpus is read from one (its corpus job's input)."""
    corpus = values["corpus"]
    if corpus["source"] != "folder":
        return
    folder = corpus["folder"]
    source = _source(CORPUS_SOURCES, Path(folder).name, "ngpt_fp4.corpus.folder", "CORPUS_SOURCES")
    yield _declare("ngpt_fp4", None, f"{folder}/{MANIFEST}", source, folder)


IMAGE_FOLDER = Source(
    "An ImageNet-style image folder: one subfolder per class holding its PNG/JPEG images",
    "Put the images in {folder} as <class>/<image> (the train split; a `test_folder` likewise), "
    "then write the manifest:",
    ("{manifest}",),
)
"""ntm's image-folder datasets (`ntm.datasets.<name>.folder`, kind image_folder)."""


def _ntm(values: Mapping[str, Any], config: Mapping[str, Any]) -> Iterator[PaperInput]:
    """Per dataset read from disk (keyed by its name): CIFAR-10's batch files, or an image
    folder's manifest (and its test folder's)."""
    for name, spec in values["datasets"].items():
        if spec["kind"] == "cifar10":
            files, source = NDFA_SOURCES["cifar10"]
            for file in files:
                yield _declare("ntm", name, f"{spec['folder']}/{file}", source, spec["folder"])
        elif spec["kind"] == "image_folder":
            for key in ("folder", "test_folder"):
                if key in spec:
                    path = f"{spec[key]}/{MANIFEST}"
                    yield _declare("ntm", name, path, IMAGE_FOLDER, spec[key])


NAVSIM_LOGS = Source(
    "OpenScene / NAVSIM v1 log pickles (one {log_name}.pkl per nuPlan log; nuPlan's licence)",
    "On a machine with network access, download the OpenScene metadata of the split with "
    "NAVSIM's download scripts (https://github.com/autonomousvision/navsim, "
    "download/download_trainval.sh or download_test.sh; the `openscene_metadata_*` archives), "
    "put its *.pkl logs in {folder}, then write the manifest:",
    ("{manifest}",),
)
"""bidrive's log folders (`bidrive.scenes.navsim.trainval` and `.test`), read by
reprolab.studies.bidrive.navsim.navsim_split."""


def _bidrive(values: Mapping[str, Any], config: Mapping[str, Any]) -> Iterator[PaperInput]:
    """The manifests of the trainval and test log folders, when the scenes are NAVSIM's."""
    scenes = values["scenes"]
    if scenes["source"] != "navsim":
        return
    for key in ("trainval", "test"):
        folder = scenes["navsim"][key]
        yield _declare("bidrive", None, f"{folder}/{MANIFEST}", NAVSIM_LOGS, folder)


SCENE_FOLDER = Source(
    "A reconstructed scene: a 3DGS point_cloud.ply, its undistorted COLMAP model in sparse/0, "
    "per-image feature maps in features/<image>.npy, the protocol's text embeddings in text.npy "
    "and the labelled mesh as labels.ply (ScanNet's <scene>_vh_clean_2.labels.ply)",
    "Train 3DGS on the scene's undistorted images (e.g. gsplat), extract per-pixel features "
    "(e.g. OpenSeg or LSeg) and the class-name text embeddings with the same encoder, lay them "
    "out in {folder} as reprolab/studies/normlift/paper_scene.py describes, then write the "
    "manifest:",
    ("{manifest}",),
)
"""normlift's scene folders (`normlift.data.folder.scenes` and `.tuning_scenes`), read by
reprolab.studies.normlift.paper_scene.scene_from_folder."""


def _normlift(values: Mapping[str, Any], config: Mapping[str, Any]) -> Iterator[PaperInput]:
    """The manifest of every evaluation and tuning scene folder, when scenes are real."""
    data = values["data"]
    if data["source"] != "folder":
        return
    for key in ("scenes", "tuning_scenes"):
        for folder in data["folder"][key]:
            yield _declare("normlift", None, f"{folder}/{MANIFEST}", SCENE_FOLDER, folder)


def _norm_enforcement(values: Mapping[str, Any], config: Mapping[str, Any]) -> Iterator[PaperInput]:
    """The language model's folder, when it plays the adaptive seats (paper scale)."""
    agents = values["agents"]
    if agents["backend"] == "language_model":
        where = "norm_enforcement.agents.language_model"
        yield _checkpoint("norm_enforcement", None, agents["language_model"]["folder"], where)


TRPR_BACKBONE = "backbone"
"""The key of trpr's backbone checkpoint: read by its tuning and run jobs, not its data jobs."""


def _trpr(values: Mapping[str, Any], config: Mapping[str, Any]) -> Iterator[PaperInput]:
    """The backbone checkpoint when it is a saved folder (key TRPR_BACKBONE); per released
    benchmark (one with a `root`, keyed by its name) the files its data job reads."""
    if values["backbone"]["checkpoint"]:
        where = "trpr.backbone.checkpoint"
        yield _checkpoint("trpr", TRPR_BACKBONE, values["backbone"]["checkpoint"], where)
    for name, spec in values["benchmarks"].items():
        if "root" in spec:
            where = f"trpr.benchmarks.{name}.root"
            files, source = _source(CIL_BENCHMARK_SOURCES, name, where, "CIL_BENCHMARK_SOURCES")
            for file in files:
                yield _declare("trpr", name, f"{spec['root']}/{file}", source, spec["root"])


Declaration = Callable[[Mapping[str, Any], Mapping[str, Any]], Iterable[PaperInput]]
DECLARATIONS: dict[str, Declaration] = {
    "ndfa": _ndfa,
    "wsi": _wsi,
    "video": _video,
    "instr": _instr,
    "ssg": _ssg,
    "visual_queries": _visual_queries,
    "vngct": _vngct,
    "strap": _strap,
    "nicer": _nicer,
    "hiccr": _hiccr,
    "trpr": _trpr,
    "proofrank": _proofrank,
    "nas": _nas,
    "overcorrection": _overcorrection,
    "ngpt_fp4": _ngpt_fp4,
    "ntm": _ntm,
    "bidrive": _bidrive,
    "normlift": _normlift,
    "norm_enforcement": _norm_enforcement,
}
"""Per study or preprocessing family: its paper-scale inputs, from (its section at the active
scale, the whole configuration). A study reading only generated or bundled data has none."""


def declared_inputs(config: Mapping[str, Any]) -> list[PaperInput]:
    """Every file the jobs of the preprocessing families and of the studies in `studies` read
    from paper-scale data, at the scale `config['scale']`: none at smoke and ci scale."""
    if config["scale"] != "paper":
        return []
    owners = [*(f for f in known_families() if f in config), *config["studies"]]
    return [
        found
        for owner in owners
        if owner in DECLARATIONS
        for found in DECLARATIONS[owner](study_params(config, owner), config)
    ]


def inputs_of(inputs: Iterable[PaperInput], owner: str, *keys: str) -> list[str]:
    """The paths a job of `owner` for the entries `keys` reads: the owner's inputs with no key
    and those of these keys (a rule's `input:`)."""
    return [i.path for i in inputs if i.owner == owner and (i.key is None or i.key in keys)]


def is_present(item: PaperInput, root: Path = Path(".")) -> bool:
    """Whether the file exists under `root`, as Snakemake checks an input."""
    return (root / item.path).exists()


def _groups(inputs: Iterable[PaperInput]) -> list[tuple[str, list[str], Source]]:
    """The inputs as (owners, paths, source) groups: a path read by several owners appears
    once, and consecutive paths of the same owners and source share a group."""
    owners: dict[str, list[str]] = {}
    sources: dict[str, Source] = {}
    for item in inputs:
        sources.setdefault(item.path, item.source)
        names = owners.setdefault(item.path, [])
        if item.owner not in names:
            names.append(item.owner)
    groups: list[tuple[str, list[str], Source]] = []
    for path, source in sources.items():
        who = ", ".join(owners[path])
        if groups and groups[-1][0] == who and groups[-1][2] == source:
            groups[-1][1].append(path)
        else:
            groups.append((who, [path], source))
    return groups


def input_table(inputs: Iterable[PaperInput], root: Path = Path("."), width: int = 100) -> str:
    """A table of `inputs` (study, present or missing, input): each dataset's files, then what
    it is and how to obtain it in words wrapped at `width` columns, and its commands on lines
    of their own, unwrapped, so they can be copied."""
    groups = _groups(inputs)
    if not groups:
        return ""
    who_width = max(len("STUDY"), *(len(who) for who, _, _ in groups))
    indent = " " * (who_width + 2)
    lines = [f"{'STUDY':<{who_width}}  STATUS   INPUT"]
    for who, paths, source in groups:
        lines.append("")
        for index, path in enumerate(paths):
            status = "present" if (root / path).exists() else "MISSING"
            label = who if index == 0 else ""
            lines.append(f"{label:<{who_width}}  {status:<7}  {path}")
        words = f"{source.description}. {source.obtain}".strip()
        lines += textwrap.wrap(
            words,
            width,
            initial_indent=indent,
            subsequent_indent=indent,
            break_long_words=False,
            break_on_hyphens=False,
        )
        lines += [f"{indent}$ {command}" for command in source.commands]
    return "\n".join(lines)


def missing_report(inputs: Iterable[PaperInput], root: Path = Path(".")) -> str:
    """What the workflow prints at paper scale when data is missing: the missing inputs as an
    `input_table`, with a headline and how to check again; "" when nothing is missing."""
    inputs = list(inputs)
    missing = [i for i in inputs if not is_present(i, root)]
    if not missing:
        return ""
    count = len({i.path for i in missing})
    total = len({i.path for i in inputs})
    return (
        f"Paper-scale data missing: {count} of {total} declared inputs "
        f"(paths relative to {root.resolve()}).\n{input_table(missing, root)}\n"
        "Obtain them as above, then check with `reprolab data-check --scale paper`."
    )
