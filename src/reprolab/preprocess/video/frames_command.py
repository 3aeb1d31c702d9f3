"""`reprolab video frames`: extract frame clips from a folder of videos outside the workflow.

The flags map one to one onto `FrameOptions` (plus the folders and `--workers`), and the
command calls the same `extract_frames` as the workflow rule. It prints a one-line summary per
status; bad videos do not make it fail (their rows in `process_list.csv` say what went wrong),
bad options do (exit 2, with the message).
"""

from __future__ import annotations

import argparse

from reprolab.preprocess.video.frames import STATUSES, FrameOptions, extract_frames
from reprolab.preprocess.video.resize import RESIZE_MODES
from reprolab.preprocess.video.sampling import SHORT_POLICIES, STRATEGIES


def cmd_frames(args: argparse.Namespace) -> int:
    """Run the frame extraction on `--videos` into `--out` (bad options raise ArgumentError,
    which the `reprolab` command reports with exit status 2)."""
    options = FrameOptions(
        num_frames=args.num_frames,
        sampling=args.sampling,
        stride=args.stride,
        target_fps=args.target_fps,
        short_policy=args.short_policy,
        size=tuple(args.size) if args.size else None,
        resize_mode=args.resize_mode,
        timeout_s=args.timeout,
    )
    frame = extract_frames(
        args.videos, args.out, options, workers=args.workers, show_progress=not args.quiet
    )
    counts = frame["status"].value_counts()
    for status in STATUSES:
        if status in counts:
            print(f"{status}: {counts[status]}")
    print(f"{len(frame)} videos; see {args.out}/process_list.csv and {args.out}/clips.h5")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `reprolab video frames`."""
    defaults = FrameOptions()
    parser = subparsers.add_parser(
        "frames",
        help="extract frame-exact clips from a folder of videos into clips.h5",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("--videos", required=True, help="folder of video files")
    parser.add_argument("--out", required=True, help="output folder (clips.h5, index, probe/)")
    parser.add_argument("--num-frames", type=int, default=defaults.num_frames)
    parser.add_argument("--sampling", choices=STRATEGIES, default=defaults.sampling)
    parser.add_argument("--stride", type=int, default=defaults.stride, help="dense sampling")
    parser.add_argument(
        "--target-fps", type=float, default=defaults.target_fps, help="fps sampling"
    )
    parser.add_argument("--short-policy", choices=SHORT_POLICIES, default=defaults.short_policy)
    parser.add_argument(
        "--size", type=int, nargs=2, metavar=("H", "W"), default=None, help="default: native"
    )
    parser.add_argument("--resize-mode", choices=RESIZE_MODES, default=defaults.resize_mode)
    parser.add_argument(
        "--timeout", type=float, default=defaults.timeout_s, help="seconds per video"
    )
    parser.add_argument("--workers", type=int, default=1, help="decoding processes")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=cmd_frames)
