"""The stream manifest (`stream.yaml`): the ordered tasks of a continual-instruction stream.

    name: synthcit
    images: synthcit.h5          # optional: the HDF5 file the records point into
    align: align.jsonl           # optional: records for the alignment pre-training
    image_root: images           # optional: default image root of every record file
    tasks:                       # in stream order
      - {name: digit, train: digit/train.jsonl, test: digit/test.jsonl, metric: exact_match}
      - {name: textvqa, train: TextVQA/train.json, test: TextVQA/test.json, metric: vqa_acc,
         image_root: coin}       # a folder (or a link to one) inside the stream's folder

Every path is relative to the manifest's folder and must lie within it, as must every image a
record names (`..` cannot leave the folder; link outside data in), unless the caller allows
outside paths explicitly (`allow_outside`, `streams check --allow-outside-paths`). `metric` is
any string; it fills the records that lack `eval.metric`, and the task's name fills those that
lack `task` (CoIN files have neither). `read_manifest` validates the yaml alone (unknown keys
are refused, every problem names the file and the key); `load_stream` also loads every record
file through `check.load_records`, so a real benchmark and the synthetic stream take the same
path, and a stream with bad files is refused with the report of each. `write_stream` writes one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from reprolab.core.io import write_text
from reprolab.core.params import ParamsError, load_yaml
from reprolab.preprocess.instr.check import StreamFormatError, load_records
from reprolab.preprocess.instr.images import lies_within
from reprolab.preprocess.instr.records import Record, json_type

ALIGN_TASK = "align"
_TOP_KEYS = {"name": True, "align": False, "images": False, "image_root": False}
_TASK_KEYS = {"name": True, "train": True, "test": True, "metric": True, "image_root": False}


@dataclass(frozen=True)
class TaskFiles:
    """One task of a manifest, as written: its record files, metric and optional image root."""

    name: str
    train: str
    test: str
    metric: str
    image_root: str | None = None


@dataclass(frozen=True)
class Manifest:
    """A stream manifest as written (paths relative to its folder)."""

    name: str
    tasks: tuple[TaskFiles, ...]
    align: str | None = None
    images: str | None = None
    image_root: str | None = None


@dataclass(frozen=True)
class StreamTask:
    """One loaded task of a stream."""

    name: str
    metric: str
    train: list[Record]
    test: list[Record]


@dataclass(frozen=True)
class Stream:
    """A loaded stream: tasks in order, alignment records (or None), the HDF5 file (or None)."""

    name: str
    root: Path
    tasks: list[StreamTask]
    align: list[Record] | None
    images: Path | None


def _string_problems(mapping: dict, keys: dict[str, bool], where: str) -> list[str]:
    """Problems of the string-valued `keys` of `mapping` (True: required)."""
    problems = []
    for key, required in keys.items():
        if key not in mapping:
            if required:
                problems.append(f"key '{where}{key}': missing")
        elif not isinstance(mapping[key], str) or not mapping[key]:
            problems.append(
                f"key '{where}{key}': {json_type(mapping[key])}, expected a non-empty string"
            )
    return problems


def _task_problems(tasks: Any) -> list[str]:
    if not isinstance(tasks, list) or not tasks:
        return ["key 'tasks': expected a non-empty list of tasks"]
    problems = []
    seen: set[str] = set()
    for i, task in enumerate(tasks):
        if not isinstance(task, dict):
            problems.append(f"key 'tasks[{i}]': {json_type(task)}, expected a mapping")
            continue
        problems += [f"key 'tasks[{i}].{k}': unknown key" for k in task if k not in _TASK_KEYS]
        problems += _string_problems(task, _TASK_KEYS, f"tasks[{i}].")
        name = task.get("name")
        if name == ALIGN_TASK:
            problems.append(f"key 'tasks[{i}].name': '{name}' is reserved for the alignment data")
        elif isinstance(name, str) and name in seen:
            problems.append(f"key 'tasks[{i}].name': '{name}' names an earlier task too")
        if isinstance(name, str):
            seen.add(name)
    return problems


def _manifest_problems(data: Any) -> list[str]:
    if not isinstance(data, dict):
        return [f"expected a mapping at the top level, got {json_type(data)}"]
    known = {*_TOP_KEYS, "tasks"}
    problems = [f"key '{k}': unknown key" for k in data if k not in known]
    problems += _string_problems(data, _TOP_KEYS, "")
    if "tasks" not in data:
        return problems + ["key 'tasks': missing"]
    return problems + _task_problems(data["tasks"])


def read_manifest(path: str | Path) -> Manifest:
    """The validated manifest of `path`; StreamFormatError naming the file and every bad key."""
    try:
        data = load_yaml(path)  # plain data: no anchors, aliases or tags, no file text echoed
    except ParamsError as exc:
        raise StreamFormatError(str(exc)) from None
    problems = _manifest_problems(data)
    if problems:
        raise StreamFormatError("\n".join(f"{path}: {problem}" for problem in problems))
    return Manifest(
        name=data["name"],
        tasks=tuple(TaskFiles(**task) for task in data["tasks"]),
        align=data.get("align"),
        images=data.get("images"),
        image_root=data.get("image_root"),
    )


def write_stream(path: str | Path, manifest: Manifest) -> None:
    """Write `manifest` as yaml (keys in a fixed order, unset ones left out), atomically."""
    data: dict[str, Any] = {"name": manifest.name}
    for key in ("images", "align", "image_root"):
        if getattr(manifest, key) is not None:
            data[key] = getattr(manifest, key)
    data["tasks"] = [
        {k: v for k, v in vars(task).items() if v is not None} for task in manifest.tasks
    ]
    write_text(path, yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100))


@dataclass(frozen=True)
class RecordFile:
    """One record file a manifest names: where in the manifest, the file, how to read it."""

    key: str
    path: Path
    image_root: Path | None
    task: str
    metric: str | None


def _outside_paths(manifest: Manifest, root: Path) -> list[str]:
    """The manifest keys whose path lies outside the stream's folder `root`, with the path."""
    named = {"align": manifest.align, "images": manifest.images, "image_root": manifest.image_root}
    for i, task in enumerate(manifest.tasks):
        named.update(
            {f"tasks[{i}].{key}": getattr(task, key) for key in ("train", "test", "image_root")}
        )
    return [
        f"key '{key}': '{value}'"
        for key, value in named.items()
        if value is not None and not lies_within(root / value, [root])
    ]


def record_files(path: str | Path, allow_outside: bool = False) -> list[RecordFile]:
    """The record files of the manifest `path`: alignment first, then each task's train and
    test, with paths made relative to the manifest's folder (existence is not checked).

    Every path the manifest names must lie within its folder (after lexical normalisation, so
    `..` cannot leave it; link outside data into the folder instead), unless `allow_outside`:
    a stream someone else wrote cannot make a check or a training job read arbitrary files.
    StreamFormatError names each key that points outside.
    """
    path = Path(path)
    manifest, root = read_manifest(path), path.parent
    outside = [] if allow_outside else _outside_paths(manifest, root)
    if outside:
        raise StreamFormatError(
            "\n".join(
                f"{path}: {problem} lies outside the stream's folder {root} "
                "(link the data into it, or allow outside paths explicitly: "
                "`reprolab streams check --allow-outside-paths`)"
                for problem in outside
            )
        )

    def image_root(name: str | None) -> Path | None:
        return root / name if name is not None else None

    files = []
    if manifest.align is not None:
        files.append(
            RecordFile(
                "align", root / manifest.align, image_root(manifest.image_root), ALIGN_TASK, None
            )
        )
    for i, task in enumerate(manifest.tasks):
        for split in ("train", "test"):
            files.append(
                RecordFile(
                    f"tasks[{i}].{split}",
                    root / getattr(task, split),
                    image_root(task.image_root or manifest.image_root),
                    task.name,
                    task.metric,
                )
            )
    return files


def load_stream(path: str | Path, allow_outside: bool = False) -> Stream:
    """Read the manifest and every record file it names (validated, with tasks and metrics
    filled); StreamFormatError with every file's report when anything is wrong, including a
    path of the manifest or an image of a record outside the stream's folder (unless
    `allow_outside`, see `record_files`)."""
    path = Path(path)
    manifest = read_manifest(path)
    within = None if allow_outside else [path.parent]
    errors: list[str] = []
    loaded: dict[str, list[Record]] = {}
    for file in record_files(path, allow_outside):
        if not file.path.is_file():
            errors.append(f"{path}: key '{file.key}': record file {file.path} does not exist")
            continue
        try:
            loaded[file.key] = load_records(
                file.path, file.image_root, file.task, file.metric, within
            )
        except StreamFormatError as exc:
            errors.append(str(exc))
    images = path.parent / manifest.images if manifest.images is not None else None
    if images is not None and not images.is_file():
        errors.append(f"{path}: key 'images': file {images} does not exist")
    if errors:
        raise StreamFormatError("\n".join(errors))
    tasks = [
        StreamTask(task.name, task.metric, loaded[f"tasks[{i}].train"], loaded[f"tasks[{i}].test"])
        for i, task in enumerate(manifest.tasks)
    ]
    return Stream(manifest.name, path.parent, tasks, loaded.get("align"), images)
