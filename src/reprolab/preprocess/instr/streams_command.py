"""`reprolab streams build` and `reprolab streams check`: the stream tools outside the workflow.

`build --spec SPEC.yaml --out DIR` writes the synthetic stream of a spec file: its key
`generator` names SynthCIT (the default) or VisArith, its other keys are that generator's spec
(`synthetic.read_synthetic`); a bad spec exits 2 with the key that is wrong.
`check FILE [--image-root DIR] [--allow-outside-paths]` checks a record file (JSONL or a JSON
array) or, given a `stream.yaml`, every record file it names (`--image-root` then overrides the
manifest's roots). A stream's files and images must lie within its folder (or the given
`--image-root`) unless `--allow-outside-paths`. It prints each defect as
`FILE:LINE: (id X) message` and a count line, and exits 1 when any record is bad, 0 when all are
good, 2 when FILE is not a readable file (the `reprolab` command reports the error).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reprolab.core.arguments import ArgumentError, input_file
from reprolab.core.params import load_yaml
from reprolab.preprocess.instr.check import StreamFormatError, scan_file
from reprolab.preprocess.instr.stream import record_files
from reprolab.preprocess.instr.synthetic import read_synthetic

MANIFEST_SUFFIXES = (".yaml", ".yml")


def cmd_build(args: argparse.Namespace) -> int:
    """Build the stream of `--spec` into `--out` (a bad spec raises an ArgumentError naming the
    file, which the `reprolab` command reports with exit status 2)."""
    values = load_yaml(input_file("--spec", args.spec))
    try:
        generator, spec = read_synthetic(values)
    except ValueError as exc:
        raise ArgumentError(f"--spec {args.spec}: {exc}") from exc
    manifest = generator.build(spec, args.out, not args.quiet)
    records = sum(task.train + task.test for task in spec.tasks)
    align = getattr(spec, "align", None)
    records += align.n if align else 0
    print(f"wrote {manifest}: {len(spec.tasks)} tasks, {records} records")
    return 0


def _files(
    path: Path, image_root: str | None, allow_outside: bool
) -> tuple[list[tuple[Path, Path | None]], list[Path] | None]:
    """(record file, image root) pairs to check, the file itself or a manifest's files, and the
    folders their images must lie in (None: anywhere; a lone record file is not confined)."""
    root = Path(image_root) if image_root else None
    if path.suffix.lower() not in MANIFEST_SUFFIXES:
        return [(path, root)], None
    files = [(file.path, root or file.image_root) for file in record_files(path, allow_outside)]
    within = None if allow_outside else [path.parent, *([root] if root else [])]
    return files, within


def cmd_check(args: argparse.Namespace) -> int:
    """Print every defect of a record file or stream; 1 when any (a file that is not a readable
    file raises, and the `reprolab` command exits 2)."""
    path = input_file("FILE", args.file)
    try:
        files, within = _files(path, args.image_root, args.allow_outside_paths)
    except StreamFormatError as exc:
        print(exc)
        return 1
    ok = bad = defects = 0
    for file, image_root in files:
        if not file.is_file():
            print(f"{file}: record file named by {path} is not a file")
            bad += 1
            continue
        result = scan_file(file, image_root, within)
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
        help="write a synthetic stream (SynthCIT or VisArith) of a spec file",
        description=__doc__.splitlines()[0],
    )
    build.add_argument(
        "--spec", required=True, help="yaml file holding the spec (key `generator` picks one)"
    )
    build.add_argument("--out", required=True, help="output folder (stream.yaml and images)")
    build.add_argument("--quiet", action="store_true", help="no progress bar")
    build.set_defaults(func=cmd_build)
    check = subparsers.add_parser(
        "check",
        help="report every defect of a record file or stream.yaml",
        description=__doc__.splitlines()[0],
    )
    check.add_argument("file", help="record file (.jsonl or .json array) or stream.yaml")
    check.add_argument("--image-root", default=None, help="folder image paths are relative to")
    check.add_argument(
        "--allow-outside-paths",
        action="store_true",
        help="let a stream.yaml name files, and its records images, outside its folder",
    )
    check.set_defaults(func=cmd_check)
