"""Tuning: validation videos apart from every test split, records `read_tuning` accepts, runs
that train with the selected learning rate, params checks that name the key."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from reprolab.core.determinism import derive_seed, seed_everything
from reprolab.core.params import ParamsError, check_section
from reprolab.core.tuning import read_tuning, write_tuning
from reprolab.studies.visual_queries import tune
from reprolab.studies.visual_queries.dataset import split
from reprolab.studies.visual_queries.item_files import read_items
from reprolab.studies.visual_queries.items import FAMILIES, MODES
from reprolab.studies.visual_queries.jobs import fit_and_answer, make_items, run_method, with_values
from reprolab.studies.visual_queries.views import Renders
from reprolab.studies.visual_queries.workflow_io import check_grids, tuning_records
from tests.conftest import study_section

from .conftest import PARAMS

pytestmark = pytest.mark.usefixtures("torch_one_thread")
EVAL_SEEDS = [0, 1]
N_TEST = PARAMS["n_test"]
N_VALIDATION = PARAMS["tune"]["validation_videos"]


def _tested(names) -> set[str]:
    return {v for s in EVAL_SEEDS for v in split(names, s, N_TEST)["test"]}


@pytest.mark.parametrize("seed", [1000, 1001])
def test_validation_videos_are_training_videos_no_seed_tests(corpus, seed):
    parts = tune.validation_split(corpus.names, seed, N_TEST, EVAL_SEEDS, N_VALIDATION)
    own = split(corpus.names, seed, N_TEST)
    assert sorted(parts["fit"] + parts["validation"]) == own["train"]
    assert len(parts["validation"]) == N_VALIDATION
    assert not set(parts["validation"]) & set(parts["fit"])
    assert not set(parts["validation"]) & (set(own["test"]) | _tested(corpus.names))
    again = tune.validation_split(corpus.names, seed, N_TEST, EVAL_SEEDS, N_VALIDATION)
    assert again == parts


def test_validation_draw_depends_on_the_tuning_seed_and_names_its_key(corpus):
    first, second = (
        tune.validation_split(corpus.names, s, N_TEST, EVAL_SEEDS, N_VALIDATION)["validation"]
        for s in (1000, 1001)
    )
    assert first != second
    with pytest.raises(ValueError, match=r"visual_queries.tune.validation_videos: 30 .* 17 are"):
        tune.validation_split(corpus.names, 1000, N_TEST, EVAL_SEEDS, 30)


def test_tuning_reads_no_test_item(corpus, monkeypatch):
    """Every item a tuning job builds, trains on or scores comes from the tuning seed's
    training videos; the scored ones from videos that no evaluation seed tests either."""
    built, seen = [], {"fit": [], "validation": []}
    build_items, fit_and_answer = tune.build_items, tune.fit_and_answer

    def spy_build(corpus, videos, seed, cfg):
        built.extend(videos)
        return build_items(corpus, videos, seed, cfg)

    def spy_fit(method, corpus, train, test, *args):
        seen["fit"].extend(item.video for item in train)
        seen["validation"].extend(item.video for item in test)
        return fit_and_answer(method, corpus, train, test, *args)

    monkeypatch.setattr(tune, "build_items", spy_build)
    monkeypatch.setattr(tune, "fit_and_answer", spy_fit)
    tune.tune_method("blind", corpus, PARAMS, [1000], EVAL_SEEDS, 1)
    test = set(split(corpus.names, 1000, N_TEST)["test"])
    assert built and not set(built) & test
    assert seen["fit"] and not set(seen["fit"]) & test
    assert seen["validation"] and not set(seen["validation"]) & (test | _tested(corpus.names))


def test_validation_items_cover_every_family_evenly(corpus):
    parts = tune.tuning_items(corpus, 1000, PARAMS, EVAL_SEEDS)
    counts = [sum(item.family == f for item in parts["validation"]) for f in FAMILIES]
    assert min(counts) > 0 and max(counts) <= N_VALIDATION
    assert max(counts) - min(counts) <= 1
    assert not {i.video for i in parts["validation"]} & {i.video for i in parts["fit"]}


def test_score_weighs_every_family_and_mode_alike(corpus):
    items = tune.tuning_items(corpus, 1000, PARAMS, EVAL_SEEDS)["validation"]
    right = np.asarray([item.answer_idx for item in items])
    answers = {"text": right, "visual": (right + 1) % 4}
    assert tune.score(items, answers, MODES) == 50.0
    assert tune.score(items, answers, ("visual",)) == 0.0
    assert tune.scored_modes("blind") == ("visual",) and tune.scored_modes("tinyvlm") == MODES
    assert tune.metric("caption_reason").endswith("the text and visual modes")
    assert tune.metric("blind").endswith("the visual mode")


@pytest.mark.parametrize("method", ["blind", "caption_reason", "tinyvlm"])
def test_a_tune_job_writes_a_record_read_tuning_accepts(corpus, tmp_path, method):
    record = tune.tune_method(method, corpus, PARAMS, [1000], EVAL_SEEDS, 1)
    write_tuning(tmp_path / f"{method}.json", record)
    back = read_tuning(tmp_path / f"{method}.json")
    assert back["method"] == method and back["metric"] == tune.metric(method)
    assert [t["values"] for t in back["trials"]] == [{"lr": v} for v in (0.001, 0.003)]
    assert back["selected"]["lr"] in (0.001, 0.003) and np.isfinite(back["score"])
    assert back["tuning_seeds"] == [1000] and back["validation"]["evaluation_seeds"] == EVAL_SEEDS
    assert back["items"]["seed1000"]["validation"] > 0 and "lr" not in back["settings"]


@pytest.mark.parametrize("method", ["blind", "caption_reason", "tinyvlm"])
def test_reused_renders_change_no_answer(corpus, method):
    """A tuning job draws option images and TinyVLM's alignment batches once per seed
    (`views.Renders`); every later grid point answers as if it had drawn them itself."""
    parts = tune.tuning_items(corpus, 1000, PARAMS, EVAL_SEEDS)
    trial = with_values(PARAMS, method, {"lr": 0.003})
    renders = Renders()
    runs = []
    for reuse in (None, renders, renders):
        seed_everything(derive_seed(1000, "visual_queries", method), 1)
        answers, _ = fit_and_answer(
            method, corpus, parts["fit"], parts["validation"], 1000, trial, False, reuse
        )
        runs.append(answers)
    for answers in runs[1:]:
        assert all((answers[m] == runs[0][m]).all() for m in MODES)
    assert renders.option_images
    assert len(renders.align) == (PARAMS["tinyvlm"]["align"]["steps"] if method == "tinyvlm" else 0)


class _AdamW(torch.optim.AdamW):
    """AdamW that records the learning rate of every optimizer built."""

    rates: list[float] = []

    def __init__(self, params, lr, **kwargs):
        _AdamW.rates.append(lr)
        super().__init__(params, lr=lr, **kwargs)


@pytest.mark.parametrize(
    ("method", "record"),
    [("blind", "blind"), ("caption_reason", "caption_reason"), ("tinyvlm_textheavy", "tinyvlm")],
)
def test_the_run_trains_with_the_selected_lr(corpus, tmp_path, monkeypatch, method, record):
    monkeypatch.setattr(torch.optim, "AdamW", _AdamW)
    _AdamW.rates = []
    make_items(corpus, 0, PARAMS, tmp_path / "items")
    splits = read_items(tmp_path / "items" / "items.jsonl")
    metrics = run_method(
        method, corpus, splits, 0, PARAMS, {record: {"lr": 0.0123}}, 1, tmp_path / "run"
    )
    assert metrics["tuned"] == {"lr": 0.0123}
    assert _AdamW.rates and set(_AdamW.rates) == {0.0123}
    with pytest.raises(ValueError, match=f"no tuning record '{record}'"):
        run_method(method, corpus, splits, 0, PARAMS, {}, 1, tmp_path / "run")


def test_tuning_records_name_the_trained_models():
    methods = study_section("visual_queries", "paper")["methods"]
    assert tuning_records(methods) == ["blind", "caption_reason", "tinyvlm"]
    assert tuning_records(["oracle", "tinyvlm_textheavy"]) == ["tinyvlm"]


def test_grids_of_unequal_size_or_missing_are_rejected_naming_the_key():
    params = copy.deepcopy(study_section("visual_queries", "smoke"))
    check_grids(params)
    assert len({len(g["lr"]) for g in params["tune"]["grid"].values()}) == 1  # equal sizes
    params["tune"]["grid"]["blind"]["lr"] = [0.001, 0.003]
    with pytest.raises(ValueError, match=r"visual_queries.tune.grid: every method .*'blind': 2"):
        check_grids(params)
    del params["tune"]["grid"]["caption_reason"]
    with pytest.raises(ValueError, match=r"visual_queries.tune.grid: no grid .*caption_reason"):
        check_grids(params)


@pytest.mark.parametrize("group", ["blind_visual", "captioner", "tinyvlm"])
def test_a_hand_set_lr_is_rejected_naming_the_key(group):
    values = copy.deepcopy(study_section("visual_queries", "ci"))
    check_section(values, "visual_queries")
    values[group]["lr"] = 0.001
    with pytest.raises(ParamsError, match=rf"key 'visual_queries.{group}.lr'.*tune.grid"):
        check_section(values, "visual_queries")
