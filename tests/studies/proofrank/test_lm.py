"""The workflow's tiny chat LMs: prompt, byte-level tokenizer, loss masking, seeded training into
a folder that the causal-LM backend loads offline and samples from deterministically."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from reprolab.core.io import read_json
from reprolab.studies.proofrank.corpus import TECHNIQUES, bundled_files, read_corpus
from reprolab.studies.proofrank.hf_backend import CausalLMBackend
from reprolab.studies.proofrank.lm import (
    EOS,
    IGNORE,
    PAD,
    ROLE_TOKENS,
    TECHNIQUE_PHRASES,
    TRAINING_RECORD,
    batch_order,
    build_tokenizer,
    chat_prompt,
    collate,
    encode_example,
    prompt_messages,
    resolve_spec,
    train_lm,
    training_examples,
)
from reprolab.studies.proofrank.text import EXPRESSION

pytestmark = pytest.mark.usefixtures("torch_one_thread")

THEOREMS = read_corpus(bundled_files())[0]
FEW = THEOREMS[:3]
TINY = {"hidden": 16, "layers": 1, "heads": 2, "context": 1024, "vocab_size": 384}


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer(THEOREMS, 512, 1024)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny LM trained for a few steps on three theorems, and its training record."""
    folder = tmp_path_factory.mktemp("lm") / "model"
    record = train_lm(FEW, TINY, 5, 0, folder, 1, log_every=2, show_progress=False)
    return folder, record


def test_the_prompt_asks_for_a_proof_by_the_technique_named():
    free = prompt_messages("$1 + 1 = 2$.", None)
    asked = prompt_messages("$1 + 1 = 2$.", "pigeonhole")
    assert [m["role"] for m in free] == ["user"] == [m["role"] for m in asked]
    assert free[0]["content"].startswith("Prove the following theorem.\n\nTheorem: $1 + 1 = 2$.")
    assert asked[0]["content"].startswith(
        "Prove the following theorem by the pigeonhole principle."
    )
    assert "This completes the proof." in free[0]["content"]
    assert set(TECHNIQUE_PHRASES) == set(TECHNIQUES)
    with pytest.raises(ValueError, match="'geometry' is not one of"):
        prompt_messages("s", "geometry")


def test_the_tokenizer_gives_back_every_proof_and_expression_byte_for_byte(tokenizer):
    texts = [p.text for t in THEOREMS for p in t.proofs] + [t.statement for t in THEOREMS]
    texts += [e for text in texts for e in EXPRESSION.findall(text)]
    texts += ["  two spaces,\ttab and ≥ ∀ε naïve — unseen\n\n"]
    for text in texts:
        ids = tokenizer(text, add_special_tokens=False).input_ids
        assert tokenizer.decode(ids) == text
    assert len(tokenizer) == 512


def test_the_chat_template_renders_messages_like_a_chat_model(tokenizer):
    messages = prompt_messages("s", "parity")
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert text == f"<|user|>\n{messages[0]['content']}<|end|>\n<|assistant|>\n"
    encoded = tokenizer.apply_chat_template(messages, add_generation_prompt=True)
    assert encoded["input_ids"] == tokenizer(text, add_special_tokens=False).input_ids
    assert encoded["input_ids"][0] == tokenizer.convert_tokens_to_ids("<|user|>")
    assert (tokenizer.eos_token, tokenizer.pad_token) == (EOS, PAD)
    assert tokenizer.pad_token_id != tokenizer.eos_token_id
    for token in ROLE_TOKENS:
        assert tokenizer(token, add_special_tokens=False).input_ids == [
            tokenizer.convert_tokens_to_ids(token)
        ]


def test_the_loss_covers_the_proof_and_eos_only(tokenizer):
    theorem = THEOREMS[0]
    proof = theorem.proofs[0]
    ids, labels = encode_example(tokenizer, theorem.statement, "induction", proof.text)
    text = chat_prompt(tokenizer, theorem.statement, "induction")
    prompt = tokenizer(text, add_special_tokens=False).input_ids
    assert ids[: len(prompt)] == prompt and set(labels[: len(prompt)]) == {IGNORE}
    assert labels[len(prompt) :] == ids[len(prompt) :]
    assert labels[-1] == tokenizer.eos_token_id
    assert tokenizer.decode(labels[len(prompt) : -1]) == proof.text
    batch = collate([([5, 6, 7], [IGNORE, 6, 7]), ([8], [8])], pad_id=tokenizer.pad_token_id)
    assert batch["labels"].tolist() == [[IGNORE, 6, 7], [8, IGNORE, IGNORE]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert batch["input_ids"][1, 1:].tolist() == [tokenizer.pad_token_id] * 2


def test_every_proof_is_trained_under_the_free_and_its_technique_prompt(tokenizer):
    examples = training_examples(tokenizer, FEW, 1024)
    assert len(examples) == 2 * sum(len(t.proofs) for t in FEW)
    free, asked = examples[0][0], examples[1][0]
    assert tokenizer.decode(free).startswith("<|user|>\nProve the following theorem.\n")
    technique = TECHNIQUE_PHRASES[FEW[0].proofs[0].technique]
    assert f"theorem by {technique}." in tokenizer.decode(asked)
    with pytest.raises(ValueError, match=f"proof {FEW[0].proofs[0].proof_id} .* context 50"):
        training_examples(tokenizer, FEW, 50)


def test_a_spec_is_completed_from_the_defaults_and_checked():
    assert resolve_spec({"hidden": 32})["hidden"] == 32
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['width'\]"):
        resolve_spec({"width": 3})
    with pytest.raises(ValueError, match="hidden 30 is not a multiple of heads 4"):
        resolve_spec({"hidden": 30, "heads": 4})
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        resolve_spec({"batch_size": 0})
    with pytest.raises(ValueError, match="at least one theorem"):
        train_lm([], TINY, 1, 0, "unused", 1)


def test_batches_cover_each_epoch_once_and_repeat_by_seed():
    lengths = [5, 1, 9, 3, 7, 2, 8, 4, 6, 10]
    batches = list(batch_order(lengths, 3, 6, seed=0))
    assert len(batches) == 6 and all(len(b) == 3 for b in batches)
    for epoch in (batches[:3], batches[3:]):
        drawn = [i for batch in epoch for i in batch]
        assert len(set(drawn)) == 9
    assert batches == list(batch_order(lengths, 3, 6, seed=0))
    assert batches != list(batch_order(lengths, 3, 6, seed=1))


def test_training_writes_a_folder_and_a_record_without_times(trained):
    folder, record = trained
    names = {p.name for p in folder.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", TRAINING_RECORD} <= names
    saved = read_json(folder / TRAINING_RECORD)  # written with ten significant digits
    assert saved["spec"] == record["spec"] and saved["losses"] == pytest.approx(record["losses"])
    assert [p.name for p in folder.parent.iterdir()] == ["model"]  # no temporary sibling left
    assert record["steps"] == 5 and len(record["losses"]) == math.ceil(5 / 2)
    assert record["examples"] == 2 * sum(len(t.proofs) for t in FEW)
    assert record["parameters"] > 0 and record["vocab_size"] == 384
    assert math.isfinite(record["final_loss"])
    assert record["spec"]["batch_size"] == 2  # filled from DEFAULT_SPEC
    assert not any("time" in key for key in record)


def test_training_is_byte_identical_for_the_same_seed(trained, tmp_path):
    folder, record = trained
    again = train_lm(FEW, TINY, 5, 0, tmp_path / "again", 1, log_every=2, show_progress=False)
    assert again == record
    for path in sorted(folder.iterdir()):
        assert (tmp_path / "again" / path.name).read_bytes() == path.read_bytes(), path.name
    train_lm(FEW, TINY, 5, 1, tmp_path / "other", 1, show_progress=False)
    weights = "model.safetensors"
    assert (tmp_path / "other" / weights).read_bytes() != (folder / weights).read_bytes()


def test_a_trained_model_loads_offline_and_samples_by_seed(trained, no_network, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    backend = CausalLMBackend(trained[0], max_new_tokens=12, temperature=1.0, batch_size=4)
    theorem = FEW[1]
    first = backend.generate(theorem, None, 3, seed=0)
    assert len(first) == 3 and all(isinstance(text, str) for text in first)
    assert backend.generate(theorem, None, 3, seed=0) == first
    assert backend.generate(theorem, None, 3, seed=1) != first
    batch = backend.generate_batch([(FEW[0], None), (theorem, "induction")], 2, seed=0)
    assert [len(texts) for texts in batch] == [2, 2]
    assert backend.generate_batch([(FEW[0], None), (theorem, "induction")], 2, seed=0) == batch
    assert torch.get_num_threads() == 1


def test_training_replaces_an_existing_folder_whole(tmp_path: Path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "stale.txt").write_text("old")
    train_lm(FEW[:1], TINY, 1, 0, folder, 1, show_progress=False)
    assert not (folder / "stale.txt").exists() and (folder / "config.json").is_file()
