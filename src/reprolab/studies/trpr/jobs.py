"""The trpr jobs: write a benchmark's images, pre-train the backbone, and run every row through
one seed's stream.

* `write_benchmark` (`trpr_data`): DigitStyles' images from `trpr.benchmarks.digitstyles`, or a
  released benchmark read from its `root` (studies.trpr.benchmarks), as one HDF5 file with the
  train and test images and labels and the class names.
* `pretrain_backbone` (`trpr_pretrain`): the tiny ViT pre-trained on DigitStyles' pre-training
  images, saved with `save_pretrained` beside its training curve.
* `run_seed` (`trpr_run`): the stream of a seed (the benchmark's classes in the seed's order,
  cut into `tasks` tasks), every row trained through it with its tuned values, and per row
  the accuracy matrix, the summary measures, the trainable parameters and (routed rows) the
  drift analysis of learner.run_stream.

Within a seed every row starts from the same seed (adapter initialisation, batch order), so the
rows are paired by seed; the class order is the same for every row.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from reprolab.core.determinism import derive_seed, seed_everything
from reprolab.core.io import atomic_dir, read_h5, write_h5, write_json
from reprolab.core.progress import progress
from reprolab.core.tuning import selected
from reprolab.studies.trpr.data import Stream, StreamSpec, build_images, class_names, make_stream
from reprolab.studies.trpr.workflow_io import SYNTHETIC, UNTUNED, rate_source

LOG = logging.getLogger(__name__)
PRETRAIN_RECORD = "pretrain.json"
"""The pre-training curve, saved in the backbone's folder."""


def write_benchmark(name: str, spec: Mapping[str, Any], out_path: str | Path) -> None:
    """The images of benchmark `name` (params `trpr.benchmarks.<name>`) as one HDF5 file:
    `train_images`, `train_labels`, `test_images`, `test_labels`, `class_names` (and for
    DigitStyles its `pretrain_images` and `pretrain_digits`)."""
    if name == SYNTHETIC:
        images_spec = StreamSpec.from_params(spec)
        arrays = build_images(images_spec)
        names = class_names(images_spec.styles)
    else:
        from reprolab.studies.trpr.benchmarks import read_benchmark

        benchmark = read_benchmark(name, spec["root"], int(spec["image_size"]))
        arrays = {
            "train_images": benchmark.train_images,
            "train_labels": benchmark.train_labels,
            "test_images": benchmark.test_images,
            "test_labels": benchmark.test_labels,
        }
        names = benchmark.class_names
    arrays["class_names"] = np.array([n.encode() for n in names])
    write_h5(out_path, arrays, attrs={"benchmark": name})
    LOG.info(
        "%s: %d classes, %d training and %d test images",
        name,
        len(names),
        len(arrays["train_labels"]),
        len(arrays["test_labels"]),
    )


def load_stream(path: str | Path, tasks: int, seed: int) -> Stream:
    """The stream of `seed` over the benchmark file `path` (write_benchmark's): its classes in
    the seed's order, cut into `tasks` tasks."""
    arrays = read_h5(path)
    missing = {"train_images", "train_labels", "test_images", "test_labels", "class_names"} - set(
        arrays
    )
    if missing:
        raise ValueError(f"{path}: not a trpr benchmark file (missing {sorted(missing)})")
    names = [n.decode() for n in arrays["class_names"]]
    return make_stream(arrays, names, tasks, derive_seed(seed, "trpr", "order"))


def pretrain_backbone(
    backbone: Mapping[str, Any], schedule: Mapping[str, Any], images_path: str | Path, out_dir: str
) -> None:
    """Pre-train the tiny ViT on DigitStyles' pre-training images and save it to `out_dir`
    (atomically) with its curve."""
    from reprolab.studies.trpr.backbone import pretrain

    arrays = read_h5(images_path)
    model, curve = pretrain(
        arrays["pretrain_images"],
        arrays["pretrain_digits"],
        {**backbone, **schedule},
        int(schedule["seed"]),
    )
    LOG.info("pre-trained: final training accuracy %.3f", curve[-1]["accuracy"])
    with atomic_dir(out_dir) as tmp:
        model.save_pretrained(tmp)
        write_json(Path(tmp) / PRETRAIN_RECORD, {"curve": curve})


def tuned_on(benchmark: str, tuning_files: Sequence[str | Path]) -> dict[str, dict[str, Any]]:
    """{row: selected values} of the tuning records of `benchmark` among `tuning_files` (a
    record's method is `<benchmark>/<row>`, so the records of every benchmark can be summarised
    together)."""
    prefix = f"{benchmark}/"
    return {
        method.removeprefix(prefix): values
        for method, values in selected(tuning_files).items()
        if method.startswith(prefix)
    }


def row_values(row: str, chosen: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The tuned values `row` trains with, from the selected values of every tuning record
    (`chosen`): its own knob and, for a row whose knob is not the learning rate, the rate its
    rate source's record chose (workflow_io.rate_source). Nothing for an untuned row."""
    if row in UNTUNED:
        return {}
    values = dict(_record(row, chosen))
    source = rate_source(row)
    if source is not None:
        values["lr"] = _record(source, chosen)["lr"]
    return values


def _record(row: str, chosen: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Any]:
    """`chosen[row]`, or a ValueError naming the row and the records there are."""
    if row not in chosen:
        raise ValueError(f"trpr: no tuning record for row {row!r} (have {sorted(chosen)})")
    return chosen[row]


def row_settings(row: str, params: Mapping[str, Any], values: Mapping[str, Any], tasks: int) -> Any:
    """The learner's settings for `row` on a stream of `tasks` tasks: `trpr.model` (with
    `experts_per_task` experts for each task), `trpr.train` and the row's tuned `values`
    (row_values: a trained row needs its learning rate and its knob)."""
    from reprolab.studies.trpr.learner import Settings
    from reprolab.studies.trpr.methods import METHODS

    knob = METHODS[row].knob
    needed = set() if knob is None else {"lr", knob}
    if set(values) != needed:
        raise ValueError(f"trpr row {row!r}: tuned values {sorted(values)}, need {sorted(needed)}")
    model = {**params["model"], "experts": tasks * int(params["model"]["experts_per_task"])}
    return Settings.from_params(model, params["train"], values)


def run_row(
    row: str,
    backbone: Any,
    stream: Stream,
    params: Mapping[str, Any],
    values: Mapping,
    seed: int,
    frozen: Any = None,
) -> dict[str, Any]:
    """One row through `stream` from `seed` with its tuned `values` (and the stream's
    learner.FrozenInputs when computed already): learner.run_stream's measures, the accuracy
    matrix as its lower triangle (row t: tasks 0..t) and the values."""
    from reprolab.studies.trpr.learner import run_stream
    from reprolab.studies.trpr.methods import METHODS

    settings = row_settings(row, params, values, len(stream.task_classes))
    result = run_stream(METHODS[row], backbone, stream, settings, seed, frozen)
    matrix = result.pop("matrix")
    result["matrix"] = [matrix[t, : t + 1].tolist() for t in range(len(matrix))]
    result["values"] = dict(values)
    LOG.info(
        "%s: average %.3f, final %.3f, forgetting %.3f",
        row,
        result["average"],
        result["final"],
        result["forgetting"],
    )
    return result


def run_seed(
    params: Mapping[str, Any],
    benchmark: str,
    seed: int,
    backbone_dir: str | Path,
    stream_path: str | Path,
    tuning_files: Sequence[str | Path],
    out_path: str | Path,
    threads: int,
) -> dict[str, Any]:
    """Every row of `trpr.rows` through the stream of `seed` on `benchmark`, with the values
    its tuning record selected; writes metrics.json."""
    from reprolab.studies.trpr.backbone import load_backbone
    from reprolab.studies.trpr.learner import FrozenInputs

    seed_everything(derive_seed(seed, "trpr"), threads)
    chosen = tuned_on(benchmark, tuning_files)
    tasks = int(params["benchmarks"][benchmark]["tasks"])
    stream = load_stream(stream_path, tasks, seed)
    backbone = load_backbone(str(backbone_dir))
    frozen = FrozenInputs.of(backbone, stream, int(params["model"]["first_adapted"]))
    rows = {}
    for row in progress(params["rows"], f"trpr {benchmark} seed {seed}"):
        values = row_values(row, chosen)
        rows[row] = run_row(
            row, backbone, stream, params, values, derive_seed(seed, "trpr"), frozen
        )
    metrics = {
        "seed": seed,
        "benchmark": benchmark,
        "task_classes": stream.task_classes.tolist(),
        "rows": rows,
    }
    write_json(out_path, metrics)
    return metrics
