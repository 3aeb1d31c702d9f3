"""load_stream_data: a SynthCIT stream and a CoIN-layout stream through the instruction loader."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from reprolab.preprocess.instr.stream import load_stream
from reprolab.studies.vngct.data import answer_choices, load_stream_data, stream_words
from reprolab.studies.vngct.tensors import IGNORE

from .conftest import SPEC, TOKENS_PER_IMAGE, tiny_processor


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _scaled(images: np.ndarray) -> torch.Tensor:
    """uint8 images → [N, 3, H, W] in [-1, 1], what the tiny processor gives."""
    pixels = torch.as_tensor(images, dtype=torch.float32) / 127.5 - 1.0
    if pixels.dim() == 3:
        return pixels[:, None].expand(-1, 3, -1, -1)
    return pixels.permute(0, 3, 1, 2)


def test_every_distinct_image_is_one_pixel_row(stream, stream_yaml):
    n_records = SPEC["align"]["n"] + sum(t["train"] + t["test"] for t in SPEC["tasks"])
    with h5py.File(stream_yaml.parent / "synthcit.h5", "r") as file:
        images = file["images"][:]
    assert len(images) == n_records  # the generator gives every record its own image
    # first appearance order is the file's (alignment, then each task's train and test)
    pixels = stream.images.pixels()
    assert pixels.shape == (n_records, 3, 16, 16)
    torch.testing.assert_close(pixels, _scaled(images))
    used = torch.cat(
        [stream.align.image] + [s.image for t in stream.tasks for s in (t.train, t.test)]
    )
    assert sorted(used.tolist()) == list(range(n_records))


def test_tasks_keep_their_order_sizes_labels_and_choices(stream, stream_yaml):
    assert stream.name == "synthcit" and [t.name for t in stream.tasks] == ["where", "plus"]
    for task, spec in zip(stream.tasks, SPEC["tasks"], strict=True):
        assert (len(task.train), len(task.test)) == (spec["train"], spec["test"])
        answers = {
            r["conversations"][-1]["value"]
            for split in ("train", "test")
            for r in _records(stream_yaml.parent / task.name / f"{split}.jsonl")
        }
        words = stream.tokenizer.convert_ids_to_tokens(task.choices.tolist())
        assert sorted(words) == sorted("▁" + a for a in answers)
        assert task.choices.tolist() == sorted(task.choices.tolist())
        # single-token answers: exactly one labelled position per sample, always a choice
        for samples in (task.train, task.test):
            labels = samples.labels[samples.labels != IGNORE]
            assert len(labels) == len(samples) and torch.isin(labels, task.choices).all()
    where, plus = stream.tasks
    assert where.train.visual_needed.all() and not plus.train.visual_needed.any()
    image_id = stream.tokenizer.convert_tokens_to_ids("<image>")
    assert ((where.train.input_ids == image_id).sum(1) == TOKENS_PER_IMAGE).all()
    assert len(stream.align) == SPEC["align"]["n"]


def test_loading_twice_gives_the_same_tokens(stream, stream_yaml, load_data):
    again = load_data(stream_yaml)
    assert again.tokenizer.get_vocab() == stream.tokenizer.get_vocab()
    for one, two in zip(stream.tasks, again.tasks, strict=True):
        assert torch.equal(one.train.input_ids, two.train.input_ids)
        assert torch.equal(one.test.labels, two.test.labels)


def test_records_sharing_an_image_share_its_row(stream_yaml, tmp_path, load_data):
    folder = shutil.copytree(stream_yaml.parent, tmp_path / "stream")
    shared = _records(folder / "where/train.jsonl")[0]["image"]
    test_file = folder / "plus/test.jsonl"
    records = _records(test_file)
    records[0]["image"] = shared
    test_file.write_text("".join(json.dumps(r) + "\n" for r in records))
    data = load_data(folder / "stream.yaml")
    n_records = SPEC["align"]["n"] + sum(t["train"] + t["test"] for t in SPEC["tasks"])
    assert len(data.images) == n_records - 1
    where, plus = data.tasks
    assert int(plus.test.image[0]) == int(where.train.image[0])


def test_a_record_with_two_images_is_refused(stream_yaml, tmp_path, load_data):
    folder = shutil.copytree(stream_yaml.parent, tmp_path / "stream")
    train_file = folder / "where/train.jsonl"
    records = _records(train_file)
    first = records[0]
    first["image"] = [first["image"], records[1]["image"]]
    first["conversations"][0]["value"] = "<image>\n<image>\nwhere is the digit ?"
    train_file.write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(ValueError, match=r"where/train: record where-train-00000 has 2 images"):
        load_data(folder / "stream.yaml")


def test_a_coin_layout_stream_with_image_files_loads(tmp_path):
    """Two records as CoIN ships them: jpg/png paths under an image root, no generator labels."""
    import cv2

    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(2, 16, 16, 3), dtype=np.uint8)
    (tmp_path / "coco").mkdir()
    for i, image in enumerate(images):
        cv2.imwrite(str(tmp_path / "coco" / f"{i}.png"), cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
    lines = [
        {
            "id": 17 + i,
            "image": f"coco/{i}.png",
            "conversations": [
                {"from": "human", "value": "<image>\nWhat animal is this?"},
                {"from": "gpt", "value": answer},
            ],
        }
        for i, answer in enumerate(["cat", "dog"])
    ]
    (tmp_path / "vqa").mkdir()
    for split in ("train", "test"):
        (tmp_path / "vqa" / f"{split}.jsonl").write_text(
            "".join(json.dumps(line) + "\n" for line in lines)
        )
    (tmp_path / "stream.yaml").write_text(
        "name: coin2\nimage_root: .\ntasks:\n"
        "- {name: vqa, train: vqa/train.jsonl, test: vqa/test.jsonl, metric: vqa_acc}\n"
    )
    stream_yaml = tmp_path / "stream.yaml"
    data = load_stream_data(load_stream(stream_yaml), tiny_processor(stream_yaml), 4)
    assert data.align is None
    torch.testing.assert_close(data.images.pixels(), _scaled(images))
    (task,) = data.tasks
    assert task.name == "vqa" and task.train.image.tolist() == [0, 1]
    assert not task.train.visual_needed.any()
    assert task.choices.tolist() == sorted(
        data.tokenizer(" cat dog", add_special_tokens=False).input_ids
    )


def test_stream_words_and_answer_choices(stream):
    assert stream_words([]) == []
    tokenizer = stream.tokenizer
    assert answer_choices(tokenizer, ["two words", "one"]) is None
    assert answer_choices(tokenizer, ["seven", "two", "seven"]).tolist() == sorted(
        tokenizer(" seven two", add_special_tokens=False).input_ids
    )


def test_the_prompt_template_wraps_every_prompt(stream_yaml, processor):
    data = load_stream_data(load_stream(stream_yaml), processor, TOKENS_PER_IMAGE, "where {prompt}")
    plain = load_stream_data(load_stream(stream_yaml), processor, TOKENS_PER_IMAGE)
    wrapped, bare = data.tasks[0].train, plain.tasks[0].train
    extra = wrapped.input_ids.shape[1] - bare.input_ids.shape[1]  # "where" and a space
    assert extra >= 1 and processor.tokenizer.decode(wrapped.input_ids[0, 1]) == "where"
    assert torch.equal(wrapped.input_ids[:, 1 + extra :], bare.input_ids[:, 1:])
    with pytest.raises(ValueError, match="has no {prompt} field"):
        load_stream_data(load_stream(stream_yaml), processor, TOKENS_PER_IMAGE, "USER:")


def _coin_stream(root: Path, vqa_meta: dict | None = None) -> Path:
    """A two-task stream in CoIN's layout: JSON arrays of LLaVA conversation records, images
    as files under an image root; the VQA test records carry their ten human answers."""
    import cv2

    (root / "coco").mkdir(parents=True)
    for i in range(2):
        image = np.full((16, 16, 3), 60 * i, dtype=np.uint8)
        cv2.imwrite(str(root / "coco" / f"{i}.png"), image)

    def record(number: int, question: str, answer: str, meta: dict | None) -> dict:
        out = {
            "id": f"q{number}",
            "image": f"coco/{number % 2}.png",
            "conversations": [
                {"from": "human", "value": f"<image>\n{question}"},
                {"from": "gpt", "value": answer},
            ],
        }
        return out if meta is None else {**out, "meta": meta}

    ten = {"answers": ["two"] * 7 + ["2"] * 2 + ["three"]}
    files = {
        "VQAv2": [record(0, "How many dogs?", "two", vqa_meta or ten),
                  record(1, "What color is it?", "red", {"answers": ["red"] * 10})],
        "Grounding": [record(0, "Where is the dog?", "[0.12, 0.30, 0.55, 0.80]", None),
                      record(1, "Where is the cat?", "[0.00, 0.10, 0.50, 0.90]", None)],
    }  # fmt: skip
    tasks = []
    for name, records in files.items():
        (root / name).mkdir()
        for split in ("train", "test"):
            (root / name / f"{split}.json").write_text(json.dumps(records, indent=1))
        tasks.append(
            f"- {{name: {name}, train: {name}/train.json, test: {name}/test.json, metric: m}}\n"
        )
    (root / "stream.yaml").write_text("name: coin\nimage_root: .\ntasks:\n" + "".join(tasks))
    return root / "stream.yaml"


SCORING = {"max_new_tokens": 8, "metrics": {"VQAv2": "vqa_accuracy", "Grounding": "iou"}}


def test_a_coin_stream_gets_its_declared_metrics_references_and_end_tokens(tmp_path):
    stream_yaml = _coin_stream(tmp_path)
    processor = tiny_processor(stream_yaml)
    data = load_stream_data(load_stream(stream_yaml), processor, 4, scoring=SCORING)
    vqa, grounding = data.tasks
    assert (vqa.scorer.metric, grounding.scorer.metric) == ("vqa_accuracy", "iou")
    assert vqa.scorer.max_new_tokens == 8 and vqa.scorer.tokenizer is processor.tokenizer
    assert vqa.test.references == (tuple(["two"] * 7 + ["2"] * 2 + ["three"]), ("red",) * 10)
    assert grounding.test.references == (
        ("[0.12, 0.30, 0.55, 0.80]",),
        ("[0.00, 0.10, 0.50, 0.90]",),
    )
    eos = processor.tokenizer.eos_token_id
    for samples in (vqa.train, grounding.test):  # each answer ends with EOS, labelled
        last = [row[row != IGNORE][-1] for row in samples.labels]
        assert all(int(token) == eos for token in last)
    plain = load_stream_data(load_stream(stream_yaml), processor, 4)
    assert all(task.scorer is None for task in plain.tasks)
    assert not (plain.tasks[0].train.labels == eos).any()  # without scoring, no EOS label
    assert plain.tasks[0].test.references == vqa.test.references


@pytest.mark.parametrize("answers", [[], "two", ["two", 2]])
def test_bad_reference_answers_are_refused_with_file_record_and_key(tmp_path, answers):
    stream_yaml = _coin_stream(tmp_path, {"answers": answers})
    with pytest.raises(ValueError, match=r"VQAv2/train: record q0: meta.answers is .*, expected a "
                       "non-empty list of strings"):  # fmt: skip
        load_stream_data(load_stream(stream_yaml), tiny_processor(stream_yaml), 4)


def test_scoring_must_name_every_task_of_the_stream(tmp_path):
    stream_yaml = _coin_stream(tmp_path)
    scoring = {"max_new_tokens": 8, "metrics": {"VQAv2": "vqa_accuracy"}}
    with pytest.raises(ValueError, match="vngct.scoring.metrics: no metric for task\\(s\\) Ground"):
        load_stream_data(load_stream(stream_yaml), tiny_processor(stream_yaml), 4, scoring=scoring)
