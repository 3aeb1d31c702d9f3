"""The fact LM: a GPT-2 from a config learns a small world's facts, generalises them to the
held-out paraphrase, and saves a folder that loads offline, byte-identical for a seed."""

from __future__ import annotations

import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from reprolab.core.io import read_json
from reprolab.models.fact_lm import (
    TRAINING_RECORD,
    encode,
    evaluation_queries,
    fact_accuracy,
    fact_tokenizer,
    train_fact_lm,
    training_sentences,
)
from reprolab.models.facts import WorldSpec, make_world, statement

WORLD = make_world(
    WorldSpec(subjects=12, relations=2, objects=4, prefix_max=2, paraphrase_subjects=0.5, seed=0)
)
SPEC = {
    "layers": 2,
    "hidden": 48,
    "heads": 4,
    "context": 16,
    "lr": 0.01,
    "batch_size": 32,
    "arithmetic_share": 0.1,
}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lm") / "model"
    record = train_fact_lm(WORLD, SPEC, 300, 0, folder, threads=1, show_progress=False)
    return folder, record


def test_every_word_is_one_token_and_padding_carries_no_loss():
    tokenizer = fact_tokenizer(WORLD)
    text = statement(WORLD, 3, 1, 0, ["so"])
    ids = tokenizer(text).input_ids
    assert ids[0] == tokenizer.bos_token_id and len(ids) == len(text.split()) + 1
    batch = encode(tokenizer, [text, "1 + 2 = 3 ."], context=16)
    assert (batch["labels"][1] == -100).sum() == (batch["attention_mask"][1] == 0).sum() > 0
    with pytest.raises(ValueError, match="context"):
        encode(tokenizer, [text], context=4)


def test_training_sentences_mix_facts_and_arithmetic_by_the_share():
    import numpy as np

    sentences = training_sentences(WORLD, 2000, 0.25, np.random.default_rng(0))
    share = sum("+" in s for s in sentences) / len(sentences)
    assert 0.22 < share < 0.28


def test_the_model_learns_the_facts_and_the_record_says_so(trained):
    folder, record = trained
    assert record["accuracy"]["trained"] > 0.95, record["accuracy"]
    assert read_json(folder / TRAINING_RECORD)["steps"] == 300
    queries = evaluation_queries(WORLD)
    assert len(queries["paraphrase"]) == 6 * 2  # half the subjects, every relation


def test_the_folder_loads_offline_and_answers_the_same(trained, no_network, monkeypatch):
    folder, record = trained
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    found = fact_accuracy(model, tokenizer, WORLD, evaluation_queries(WORLD)["trained"])
    assert found == record["accuracy"]["trained"]


def test_training_is_byte_identical_for_a_seed(trained, tmp_path):
    folder, record = trained
    again = train_fact_lm(WORLD, SPEC, 300, 0, tmp_path / "again", threads=1, show_progress=False)
    assert again == record
    assert (tmp_path / "again" / "model.safetensors").read_bytes() == (
        folder / "model.safetensors"
    ).read_bytes()
