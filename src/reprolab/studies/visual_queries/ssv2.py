"""Something-Something v2's label files, read as one action template per video.

SSv2 ships `something-something-v2-labels.json` (``{"Putting something into something":
"104", ...}``: each of the 174 templates, brackets dropped, with its class index as a string)
and one file per split, `something-something-v2-train.json` / `-validation.json`: a list of
``{"id", "label", "template", "placeholders"}`` where the template keeps its brackets
("Putting [something] into [something]") and `placeholders` fills them in order. The videos
are `<id>.webm`. The test split's file lists ids only, with no template: it cannot be read
here. An annotation says which action a whole video shows and with which objects: no time,
place or object state within the video.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from reprolab.core.io import read_json

SLOT = re.compile(r"\[[^\[\]]*\]")
"""A bracketed slot of a template ("[something]", "[something in it]", "[number of]")."""


@dataclass(frozen=True)
class Ssv2Video:
    """One annotated video: its template's class index, the template and its fillers."""

    id: str
    template: str  # with brackets, as the split file has it
    class_index: int
    placeholders: tuple[str, ...]


def read_labels(path: str | Path) -> dict[str, int]:
    """Template (brackets dropped) -> class index, from the labels file; ValueError naming
    the file and the template when the file is not such a mapping of distinct indices."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict) or not data:
        raise ValueError(f"{path}: expected a JSON object of template -> class index")
    labels = {}
    for template, index in data.items():
        if not (isinstance(index, str) and index.isdigit()):
            raise ValueError(
                f"{path}: {template!r} has class index {index!r}; expected a string of digits"
            )
        labels[template] = int(index)
    if len(set(labels.values())) != len(labels):
        raise ValueError(f"{path}: two templates share a class index")
    return labels


def _text(entry: dict, key: str, path: Path, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{path}: {where}{key!r} is {value!r}; expected a non-empty string")
    return value


def _video(entry: object, labels: dict[str, int], path: Path, where: str) -> Ssv2Video:
    """One split entry, checked against the labels file."""
    if not isinstance(entry, dict):
        raise ValueError(f"{path}: {where} is {entry!r}; expected an object")
    video_id = _text(entry, "id", path, where)
    if "template" not in entry:
        raise ValueError(
            f"{path}: {where}has no key 'template' (id {video_id}); expected a labelled split "
            "(train or validation: the test split is unlabelled)"
        )
    template = _text(entry, "template", path, where)
    key = template.replace("[", "").replace("]", "")
    if key not in labels:
        raise ValueError(
            f"{path}: {where}'template' {template!r} (id {video_id}) is not in the labels "
            "file; expected one of its templates with brackets around the slots"
        )
    placeholders = entry.get("placeholders")
    slots = len(SLOT.findall(template))
    if (
        not isinstance(placeholders, list)
        or not all(isinstance(p, str) for p in placeholders)
        or len(placeholders) != slots
    ):
        raise ValueError(
            f"{path}: {where}'placeholders' is {placeholders!r} (id {video_id}); expected "
            f"{slots} string(s), one per slot of {template!r}"
        )
    return Ssv2Video(video_id, template, labels[key], tuple(placeholders))


def read_split(path: str | Path, labels: dict[str, int]) -> dict[str, Ssv2Video]:
    """The videos of a labelled split file by id; ValueError naming the file, the entry, the
    key and what was expected for a malformed or unlabelled entry or a repeated id."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of {{id, label, template, placeholders}}")
    videos: dict[str, Ssv2Video] = {}
    for k, entry in enumerate(data):
        video = _video(entry, labels, path, f"entry {k}: ")
        if video.id in videos:
            raise ValueError(f"{path}: entry {k}: 'id' {video.id} is listed twice")
        videos[video.id] = video
    return videos
