"""Tiny files in the real datasets' formats: CLEVRER annotations, SSv2 label files, webm videos."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from reprolab.preprocess.video.encode import write_mp4
from reprolab.preprocess.video.frames import FrameOptions, extract_frames


def write_webm(path: Path, n_frames: int, size: int = 16) -> None:
    """A real VP9 WebM file (as SSv2 ships its videos) of `n_frames` grey ramps, via PyAV."""
    with av.open(str(path), "w", format="webm") as container:
        stream = container.add_stream("libvpx-vp9", rate=Fraction(12))
        stream.width = stream.height = size
        stream.pix_fmt = "yuv420p"
        for index in range(n_frames):
            image = np.full((size, size, 3), 8 * index % 256, dtype=np.uint8)
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            frame.pts = index
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))


def write_mp4_video(path: Path, n_frames: int, size: int = 16) -> None:
    """A real H.264 MP4 file (as CLEVRER ships its videos) through the project's writer."""
    frames = np.zeros((n_frames, size, size, 3), dtype=np.uint8)
    frames[..., 0] = (np.arange(n_frames) * 4 % 256)[:, None, None]
    write_mp4(path, frames, fps=25)


def decode(videos: Path, out: Path, num_frames: int, suffix: str) -> Path:
    """The frame stage over `videos`: `num_frames` uniform frames per video; returns `out`."""
    options = {"num_frames": num_frames, "sampling": "uniform", "extensions": [suffix]}
    extract_frames(videos, out, FrameOptions.from_params(options), show_progress=False)
    return out


def clevrer_annotation(
    scene_index: int,
    tracks: dict[int, list[tuple[float, float]]],
    looks: dict[int, tuple[str, str, str]],
    collisions: list[tuple[int, int, int]],
    hidden: dict[int, range] | None = None,
) -> dict:
    """A CLEVRER annotation_<n>.json body: `tracks` object id -> per-frame (x, y), `looks`
    object id -> (color, material, shape), `collisions` (frame, id, id), `hidden` object id
    -> frames outside the camera view."""
    hidden = hidden or {}
    n_frames = len(next(iter(tracks.values())))
    return {
        "scene_index": scene_index,
        "video_filename": f"video_{scene_index:05d}.mp4",
        "object_property": [
            {"object_id": i, "color": c, "material": m, "shape": s}
            for i, (c, m, s) in looks.items()
        ],
        "motion_trajectory": [
            {
                "frame_id": t,
                "objects": [
                    {
                        "object_id": i,
                        "location": [x, y, 0.2],
                        "orientation": [0.0, 0.0, 0.0],
                        "velocity": [0.0, 0.0, 0.0],
                        "angular_velocity": [0.0, 0.0, 0.0],
                        "inside_camera_view": t not in hidden.get(i, range(0)),
                    }
                    for i, track in tracks.items()
                    for x, y in [track[t]]
                ],
            }
            for t in range(n_frames)
        ],
        "collision": [
            {"object_ids": [a, b], "frame_id": t, "location": [0.0, 0.0, 0.2]}
            for t, a, b in collisions
        ],
    }


def ssv2_entries(n: int, labels: dict[str, str]) -> list[dict]:
    """SSv2 split-file entries of videos "100", "101", ...: each takes the next template of
    `labels` in turn, with its `something` bracketed as a placeholder."""
    templates, entries = list(labels), []
    for k in range(n):
        template = templates[k % len(templates)].replace("something", "[something]")
        entries.append(
            {
                "id": str(100 + k),
                "label": "x",
                "template": template,
                "placeholders": ["x"] * template.count("["),
            }
        )
    return entries


def write_json(path: Path, data: object) -> Path:
    """`data` as JSON at `path` (folders made); returns `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path
