"""Which frames of each real video its decoded clip holds, from the video family's frame stage.

The frame stage (`preprocess.video.frames`, PyAV) decodes a clip per video and lists, in
`index.csv`, the video frame number behind every clip frame (`frame_indices`, space-separated)
and, in `process_list.csv`, the videos it could not decode. The real datasets' annotations
count time in video frames (CLEVRER's `frame_id`) or not at all (Something-Something v2), so
the loaders place their questions on clip frames through this index. Videos are keyed by file
stem, as `dataset.load_corpus` keys them: `video_10000.mp4` is `video_10000`, the
Something-Something v2 file `78687.webm` is `78687`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class ClipIndex:
    """Per decoded video (by stem) its clip's video frame numbers, and the stems that failed."""

    frames: dict[str, np.ndarray]  # int64 [T], clip frame -> video frame
    failed: tuple[str, ...]


def _read_csv(path: Path, columns: tuple[str, ...]) -> pd.DataFrame:
    """A frame-stage CSV with `columns`; ValueError naming the file and the missing column."""
    if not path.is_file():
        raise ValueError(f"{path}: missing; expected the frame stage's output")
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: no column {missing[0]!r}; expected columns {list(columns)}")
    return frame


def read_clip_index(frames_dir: str | Path) -> ClipIndex:
    """The clip frames of every decoded video in `frames_dir` (index.csv, process_list.csv)."""
    frames_dir = Path(frames_dir)
    index = _read_csv(frames_dir / "index.csv", ("video", "frame_indices"))
    status = _read_csv(frames_dir / "process_list.csv", ("video", "status"))
    frames = {}
    for number, (video, listed) in enumerate(
        zip(index["video"], index["frame_indices"], strict=True), start=2
    ):
        try:
            frames[Path(video).stem] = np.asarray([int(v) for v in listed.split()], np.int64)
        except ValueError as exc:
            raise ValueError(
                f"{frames_dir / 'index.csv'}, line {number}: frame_indices {listed!r} is not a "
                "space-separated list of frame numbers"
            ) from exc
    failed = tuple(Path(v).stem for v in status.loc[status["status"] != "processed", "video"])
    return ClipIndex(frames, failed)
