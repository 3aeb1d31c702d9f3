"""One workflow job of the ssg study: build a dataset for a seed, train every method on it.

A job is one (dataset, seed) and trains its methods one after another in the same process: the
runs are seconds each, so one process per run would spend as long starting torch as training.
Each method trains with the values its `ssg_tune` record selected (`tune.tuned_params`). Each
run is written as soon as it ends (`storage.write_run`), under
`<runs_dir>/<dataset>/<method>/seed<k>/`. `tune_dataset` is the `ssg_tune` job of one method.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reprolab.core.progress import progress
from reprolab.studies.ssg.data import Bags, make_dataset
from reprolab.studies.ssg.storage import write_run
from reprolab.studies.ssg.train import train_run
from reprolab.studies.ssg.tune import tune_method
from reprolab.studies.ssg.wsi_bags import make_wsi_bags


def load_dataset(
    spec: dict, seed: int, wsi_inputs: dict[str, Any] | None = None
) -> tuple[Bags, Bags]:
    """(train, test) bags: generated for synthetic generators, read from slides for `wsi`.

    `wsi_inputs` holds the paths a `wsi` dataset reads: `features`, `labels` and `truth`
    (None for cohorts without tile annotations).
    """
    if spec["generator"] != "wsi":
        return make_dataset(spec, seed)
    if not wsi_inputs:
        raise ValueError("a 'wsi' dataset needs its features, labels and truth paths")
    return make_wsi_bags(
        spec, seed, wsi_inputs["features"], wsi_inputs["labels"], wsi_inputs.get("truth")
    )


def run_dir(runs_dir: str | Path, dataset: str, method: str, seed: int) -> Path:
    """Folder of one run."""
    return Path(runs_dir) / dataset / method / f"seed{seed}"


def train_dataset(
    bags: tuple[Bags, Bags],
    dataset: str,
    methods: Sequence[str],
    settings: Mapping[str, tuple[dict[str, Any], dict[str, Any]]],
    seed: int,
    threads: int,
    runs_dir: str | Path,
) -> None:
    """Train each of `methods` on the (train, test) `bags` with its (model, train) `settings`
    (`tune.tuned_params`) and write its run."""
    for method in progress(methods, f"ssg {dataset} seed{seed}", total=len(methods)):
        model, train = settings[method]
        result = train_run(*bags, method, model, train, seed, threads)
        folder = run_dir(runs_dir, dataset, method, seed)
        write_run(folder / "metrics.json", folder / "curves.h5", result)
        print(f"ssg {dataset} seed{seed} {method}: trained in {result.seconds:.1f} s", flush=True)


def tune_dataset(
    spec: dict[str, Any],
    wsi_inputs: dict[str, Any] | None,
    method: str,
    params: Mapping[str, Any],
    seeds: Sequence[int],
    threads: int,
) -> dict[str, Any]:
    """The tuning record of `method` (`tune.tune_method`) on the training bags of the dataset
    `spec` drawn for each tuning seed; the seeds' test bags are dropped unread."""
    train_bags = {int(seed): load_dataset(spec, int(seed), wsi_inputs)[0] for seed in seeds}
    return tune_method(
        method, params["model"], params["train"], params["tune"], train_bags, threads
    )
