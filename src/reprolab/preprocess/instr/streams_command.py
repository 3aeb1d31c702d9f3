"""`reprolab streams build` and `reprolab streams check`: the stream tools outside the workflow.

`build --spec SPEC.yaml --out DIR` writes the SynthCIT stream of a spec file (the mapping that
`synthcit.SynthCITSpec.from_params` reads); a bad spec exits 2 with the key that is wrong.
`check FILE [--image-root DIR]` checks a record file (JSONL or a JSON array) or, given a
`stream.yaml`, every record file it names (`--image-root` then overrides the manifest's roots).
It prints each defect as `FILE:LINE: (id X) message` and a count line, and exits 1 when any
record is bad, 0 when all are good, 2 when FILE does not exist.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reprolab.core.params import load_yaml
from reprolab.preprocess.instr.check import StreamFormatError, scan_file
from reprolab.preprocess.instr.stream import record_files
from reprolab.preprocess.instr.synthcit import SynthCITSpec, build_synthcit

MANIFEST_SUFFIXES = (".yaml", ".yml")


def cmd_build(args: argparse.Namespace) -> int:
    """Build the stream of `--spec` into `--out`; 2 on a bad spec."""
    try:
        spec = SynthCITSpec.from_params(load_yaml(args.spec))
    except (OSError, ValueError) as exc:
        print(f"error: {args.spec}: {exc}", file=sys.stderr)
        return 2
    manifest = build_synthcit(spec, args.out, show_progress=not args.quiet)
    records = sum(task.train + task.test for task in spec.tasks)
    records += spec.align.n if spec.align else 0
    print(f"wrote {manifest}: {len(spec.tasks)} tasks, {records} records")
    return 0


def _files(path: Path, image_root: str | None) -> list[tuple[Path, Path | None]]:
    """(record file, image root) pairs to check: the file itself, or a manifest's files."""
    if path.suffix.lower() not in MANIFEST_SUFFIXES:
        return [(path, Path(image_root) if image_root else None)]
    return [
        (file.path, Path(image_root) if image_root else file.image_root)
        for file in record_files(path)
    ]


def cmd_check(args: argparse.Namespace) -> int:
    """Print every defect of a record file or stream; 1 when any, 2 when the file is missing."""
    path = Path(args.file)
    if not path.is_file():
        print(f"error: {path} does not exist", file=sys.stderr)
        return 2
    try:
        files = _files(path, args.image_root)
    except StreamFormatError as exc:
        print(exc)
        return 1
    ok = bad = defects = 0
    for file, image_root in files:
        if not file.is_file():
            print(f"{file}: record file named by {path} does not exist")
            bad += 1
            continue
        result = scan_file(file, image_root)
        for defect in result.defects:
            print(defect.format(file))
        ok, bad, defects = ok + result.ok, bad + result.bad, defects + len(result.defects)
    if bad:
        print(f"{defects} defect(s) in {bad} bad record(s); {ok} record(s) ok")
        return 1
    print(f"{ok} records ok")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register `reprolab streams build` and `reprolab streams check`."""
    build = subparsers.add_parser(
        "build",
        help="write the synthetic SynthCIT stream of a spec file",
        description=__doc__.splitlines()[0],
    )
    build.add_argument("--spec", required=True, help="yaml file holding the SynthCIT spec")
    build.add_argument("--out", required=True, help="output folder (stream.yaml, synthcit.h5)")
    build.add_argument("--quiet", action="store_true", help="no progress bar")
    build.set_defaults(func=cmd_build)
    check = subparsers.add_parser(
        "check",
        help="report every defect of a record file or stream.yaml",
        description=__doc__.splitlines()[0],
    )
    check.add_argument("file", help="record file (.jsonl or .json array) or stream.yaml")
    check.add_argument("--image-root", default=None, help="folder image paths are relative to")
    check.set_defaults(func=cmd_check)
