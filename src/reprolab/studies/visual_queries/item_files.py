"""Item files: the per-seed item set, and the test benchmark in the card's JSONL layout.

`items.jsonl` (one record per item, all splits) keeps each option as its symbolic state, which
the study's backends read back with `read_items`. A record is ``{id, split, family, video,
question, options, answer_idx, distractor_kinds, n_frames, truth, sources}``: `options` and
`truth` are states as lists of ``[shape, colour, cell]`` (indices into `synth.SHAPES`,
`synth.COLOUR_NAMES` and `synth.CELL_NAMES`, sorted by shape), `distractor_kinds` names each
option's cell of the option grid (`items.KINDS`: `answer`, `colours_swapped`, `other_cells`,
`other_cells_colours_swapped`) and `sources` the video whose layout each option wears (the
item's own video, or the other video its distractor layout was drawn from).

The benchmark files are what another harness (or a `transformers` VLM at paper scale) would
consume, one file per mode: `benchmark_text.jsonl` and `benchmark_visual.jsonl` with records
``{id, family, mode, video, question, options: [{type: "text", value} | {type: "image",
path, row, slot}], answer_idx, state_id}``, the option images of visual mode in
`options.h5` (`images` uint8 [N, 4, H, W, 3], row = test item, slot = option).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from reprolab.core.io import write_h5, write_jsonl
from reprolab.preprocess.video.synth import SceneSpec
from reprolab.studies.visual_queries.items import Item
from reprolab.studies.visual_queries.views import option_images, option_texts

OPTIONS_H5 = "options.h5"


def _record(item: Item, split: str) -> dict[str, Any]:
    return {
        "id": item.id,
        "split": split,
        "family": item.family,
        "video": item.video,
        "question": item.question,
        "options": [[list(sprite) for sprite in state] for state in item.options],
        "answer_idx": item.answer_idx,
        "distractor_kinds": list(item.distractor_kinds),
        "n_frames": item.n_frames,
        "truth": [list(sprite) for sprite in item.truth],
        "sources": list(item.sources),
    }


def _state(rows: list[list[int]]) -> tuple[tuple[int, int, int], ...]:
    return tuple(tuple(int(v) for v in row) for row in rows)  # type: ignore[misc]


def write_items(path: str | Path, splits: dict[str, Sequence[Item]]) -> None:
    """Write every split's items to one items.jsonl."""
    write_jsonl(path, [_record(item, split) for split, items in splits.items() for item in items])


def write_split_items(
    out_dir: str | Path,
    parts: Mapping[str, list[str]],
    build: Callable[[list[str]], tuple[list[Item], dict[str, int]]],
    families: Sequence[str],
    failed_videos: Sequence[str],
) -> dict[str, Any]:
    """Build each split's items from its videos (`build(members)` returns the items and how many
    each family skipped), write them to `out_dir`/items.jsonl and return the counts a real
    dataset's items job records: items per split, skipped per split and family, the families
    and the videos the frame stage failed on."""
    splits, skipped = {}, {}
    for part, members in parts.items():
        splits[part], skipped[part] = build(members)
    write_items(Path(out_dir) / "items.jsonl", splits)
    return {
        "items": {part: len(items) for part, items in splits.items()},
        "skipped": skipped,
        "families": list(families),
        "failed_videos": list(failed_videos),
    }


def read_items(path: str | Path) -> dict[str, list[Item]]:
    """Items per split from items.jsonl; a bad line raises ValueError naming file and line."""
    splits: dict[str, list[Item]] = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        try:
            record = json.loads(line)
            item = Item(
                id=record["id"],
                family=record["family"],
                video=record["video"],
                question=record["question"],
                options=tuple(_state(o) for o in record["options"]),
                answer_idx=int(record["answer_idx"]),
                distractor_kinds=tuple(record["distractor_kinds"]),
                n_frames=int(record["n_frames"]),
                truth=_state(record["truth"]),
                sources=tuple(str(v) for v in record["sources"]),
            )
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}, line {number}: not an item record ({exc!r})") from exc
        splits.setdefault(record["split"], []).append(item)
    return splits


def write_benchmark(
    out_dir: str | Path,
    items: Sequence[Item],
    seed: int,
    spec: SceneSpec,
    render: dict[str, Any],
) -> None:
    """The test items in both modes (card layout) and the option images."""
    out_dir = Path(out_dir)
    images = np.stack([option_images(item, seed, spec, render) for item in items])
    write_h5(out_dir / OPTIONS_H5, {"images": images})
    for mode in ("text", "visual"):
        records = []
        for row, item in enumerate(items):
            if mode == "text":
                options = [{"type": "text", "value": t} for t in option_texts(item)]
            else:
                options = [
                    {"type": "image", "path": OPTIONS_H5, "row": row, "slot": slot}
                    for slot in range(len(item.options))
                ]
            records.append(
                {
                    "id": item.id,
                    "family": item.family,
                    "mode": mode,
                    "video": item.video,
                    "question": item.question,
                    "options": options,
                    "answer_idx": item.answer_idx,
                    "state_id": list(item.state_ids),
                }
            )
        write_jsonl(out_dir / f"benchmark_{mode}.jsonl", records)
