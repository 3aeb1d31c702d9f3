"""Paper scale: the run jobs answer the real datasets' items too (CLEVRER, Something-Something v2).

At paper scale the study's params name the real datasets (`real_items`); the items rule
`visual_queries_real_items` writes one seed's items of each (`make_real_items`) at
`workflow_io.items_path(dataset, seed)`, from the clips the video family decoded at
`workflow_io.frames_dir(dataset)`. These paths are the rules' (workflow/rules/visual_queries.smk
names its inputs and outputs with these functions) and the run job's (`jobs.run_method` calls
`answer_real_datasets` when the params hold `real_items`), so what a job reads is what its rule
declares.

Which methods can answer real items, and why the others cannot (their cells are NaN):

- `oracle`: reads the state behind each option (parses the sentence in text mode,
  `real_views.RealView.parse`; takes the state an image was drawn from in visual mode);
- `blind`: its text half (TF-IDF + logistic regression over the option sentences, trained on
  the seed's real training items; nothing tuned). Its visual half, the option-image CNN, is
  not run: its learning rate was tuned on sprite option images, and no tuning job sees floor
  maps;
- `blind_set`: fewest differing (look, cell) pairs to the other three options in text mode
  (SSv2's four templates always differ in their one template, so all four tie and slot 0 is
  picked), least mean squared RGB difference between the floor maps in visual mode;
- `hf_vlm`: the local VLM reads the clip's frames and the options as it does on sprites;
- `pixel_nn`: not applicable: it matches option images to frames pixel by pixel, and a
  schematic floor map is not a camera frame;
- `caption_reason`, `tinyvlm`, `tinyvlm_textheavy`: not applicable: their perception (the
  captioner's per-shape heads, TinyVLM's alignment on rendered sprite states) is built for the
  sprite world's closed vocabulary of shapes, colours and screen cells, and reads frames of
  32 px; none of it is trained or defined for CLEVRER's camera frames or SSv2's templates.

A run's metrics.json gets `<dataset>_<family>_acc_<mode>` for every family and mode (NaN where
the dataset poses no such item, e.g. SSv2's `tfr`, `cmd` and visual mode, or the method cannot
answer), `<dataset>_n_test` and, per dataset, the reason a method was not run
(`not_applicable`). predictions.csv gets the real items' rows, their ids prefixed
`<dataset>/`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pandas as pd

from reprolab.studies.visual_queries import baselines
from reprolab.studies.visual_queries.item_files import read_items
from reprolab.studies.visual_queries.items import FAMILIES, MODES, Item
from reprolab.studies.visual_queries.real_views import RealView
from reprolab.studies.visual_queries.ssv2 import read_labels
from reprolab.studies.visual_queries.workflow_io import frames_dir, items_path, real_datasets

APPLICABLE = ("oracle", "blind", "blind_set", "hf_vlm")
"""The methods that answer real items (see the module docstring)."""
NOT_APPLICABLE = {
    "pixel_nn": "matches option images to frames pixel by pixel; a floor map is no camera frame",
    "caption_reason": "its captioner reads sprite shapes, colours and screen cells only",
    "tinyvlm": "its encoders are aligned on rendered sprite states only",
    "tinyvlm_textheavy": "its encoders are aligned on rendered sprite states only",
}
BLIND_VISUAL_NOT_RUN = "the option-image CNN's learning rate was tuned on sprite images only"


def make_real_items(
    dataset: str, frames: str | Path, seed: int, params: Mapping[str, Any], out_dir: str | Path
) -> dict[str, Any]:
    """Write one seed's items.jsonl of `dataset` (clevrer_items / ssv2_items) and return the
    counts."""
    spec = params["real_items"][dataset]
    if dataset == "clevrer":
        from reprolab.studies.visual_queries.clevrer_items import make_items

        return make_items(spec["annotations"], frames, seed, params, out_dir)
    from reprolab.studies.visual_queries.ssv2_items import make_items as make_ssv2_items

    return make_ssv2_items(spec["labels"], spec["split"], frames, seed, params, out_dir)


def real_view(dataset: str, params: Mapping[str, Any]) -> RealView:
    """How `dataset`'s options are shown (SSv2's templates from its labels file)."""
    spec = params["real_items"][dataset]
    if dataset == "clevrer":
        return RealView("clevrer", image_size=int(spec["image_size"]))
    templates = {index: template for template, index in read_labels(spec["labels"]).items()}
    return RealView("ssv2", templates=templates)


@dataclass
class RealClips:
    """The decoded clips of a real dataset, read one video at a time from clips.h5 (a real
    dataset's clips do not fit in memory at once)."""

    frames_dir: Path
    _rows: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        index = pd.read_csv(Path(self.frames_dir) / "index.csv")
        self._rows = {
            Path(str(v)).stem: int(r) for v, r in zip(index["video"], index["row"], strict=True)
        }

    def clip(self, name: str) -> np.ndarray:
        """The decoded frames of one video, uint8 [T, H, W, 3]."""
        with h5py.File(Path(self.frames_dir) / "clips.h5", "r") as handle:
            return handle["clips"][self._rows[name]]


def oracle(items: list[Item], view: RealView, mode: str) -> np.ndarray:
    """The option whose shown scene is the truth's (-1 unless exactly one is)."""
    answers = []
    for item in items:
        if mode == "text":
            shown = [view.parse(text) for text in view.option_texts(item)]
        else:
            shown = [view.key(state) for state in item.options]
        matches = [k for k, scene in enumerate(shown) if scene == view.key(item.truth)]
        answers.append(matches[0] if len(matches) == 1 else -1)
    return np.asarray(answers)


def _differences(a: tuple, b: tuple) -> int:
    """(look, cell) pairs in one shown scene and not the other, counted both ways."""
    left, right = list(a), list(b)
    for pair in a:
        if pair in right:
            right.remove(pair)
            left.remove(pair)
    return len(left) + len(right)


def blind_set(
    items: list[Item], view: RealView, mode: str, seed: int, render: Mapping[str, Any]
) -> np.ndarray:
    """The option closest to the other three (see the module docstring); ties → lowest slot."""
    answers = []
    for item in items:
        if mode == "text":
            shown = [view.parse(text) for text in view.option_texts(item)]
            cost = [sum(_differences(a, b) for b in shown) for a in shown]
        else:
            images = view.option_images(item, seed, render).astype(np.float32)
            cost = ((images[:, None] - images[None]) ** 2).mean(axis=(2, 3, 4)).sum(axis=1)
        answers.append(int(np.argmin(cost)))
    return np.asarray(answers)


def hf_answers(
    model: Any,
    items: list[Item],
    view: RealView,
    clips: RealClips,
    mode: str,
    seed: int,
    render: Mapping[str, Any],
) -> np.ndarray:
    """The VLM's pick per item: the clip's first `n_frames` frames, the question, the options."""
    picks = []
    for item in items:
        if mode == "text":
            options: list = view.option_texts(item)
        else:
            options = list(view.option_images(item, seed, render))
        picks.append(model.answer(clips.clip(item.video)[: item.n_frames], item.question, options))
    return np.asarray(picks)


def answer_dataset(
    method: str,
    splits: Mapping[str, list[Item]],
    view: RealView,
    clips: RealClips | None,
    seed: int,
    params: Mapping[str, Any],
    hf_model: Callable[[], Any] | None = None,
) -> tuple[dict[str, np.ndarray], str | None]:
    """`method`'s picks on the test items per mode it can answer, and why it answers no or
    only some modes (None when it answers every mode the dataset shows)."""
    test, render = splits.get("test", []), params["render"]
    if method in NOT_APPLICABLE:
        return {}, NOT_APPLICABLE[method]
    if method not in APPLICABLE:
        raise ValueError(f"unknown visual_queries method {method!r}")
    if method == "oracle":
        return {mode: oracle(test, view, mode) for mode in view.modes}, None
    if method == "blind_set":
        return {mode: blind_set(test, view, mode, seed, render) for mode in view.modes}, None
    if method == "blind":
        text = baselines.blind_text(splits.get("train", []), test, view.option_texts)
        return {"text": text}, (BLIND_VISUAL_NOT_RUN if "visual" in view.modes else None)
    if hf_model is None or clips is None:
        raise ValueError("hf_vlm needs the model and the clips")
    model = hf_model()
    return {m: hf_answers(model, test, view, clips, m, seed, render) for m in view.modes}, None


def accuracy(items: list[Item], predicted: np.ndarray | None) -> dict[str, float]:
    """Accuracy (%) per family; NaN for a family without items or a mode not answered."""
    out = {}
    for family in FAMILIES:
        rows = [k for k, item in enumerate(items) if item.family == family]
        if predicted is None or not rows:
            out[family] = float("nan")
        else:
            out[family] = 100.0 * float(
                np.mean([predicted[k] == items[k].answer_idx for k in rows])
            )
    return out


def answer_real_datasets(
    method: str,
    seed: int,
    params: Mapping[str, Any],
    hf_model: Callable[[], Any] | None = None,
    root: str | Path = ".",
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Metrics and prediction rows of `method` on every real dataset's test items of `seed`
    (see the module docstring); files under `root`."""
    root = Path(root)
    metrics: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    reasons = {}
    for dataset in real_datasets(params):
        splits = read_items(root / items_path(dataset, seed))
        view = real_view(dataset, params)
        clips = RealClips(root / frames_dir(dataset)) if method == "hf_vlm" else None
        answers, reason = answer_dataset(method, splits, view, clips, seed, params, hf_model)
        if reason:
            reasons[dataset] = reason
        test = splits.get("test", [])
        metrics[f"{dataset}_n_test"] = len(test)
        for mode in MODES:
            for family, value in accuracy(test, answers.get(mode)).items():
                metrics[f"{dataset}_{family}_acc_{mode}"] = value
        rows += [
            {
                "item": f"{dataset}/{item.id}",
                "mode": mode,
                "answer": item.answer_idx,
                "predicted": int(answers[mode][k]),
            }
            for mode in MODES
            if mode in answers
            for k, item in enumerate(test)
        ]
    if reasons:
        metrics["not_applicable"] = reasons
    return metrics, rows
