"""The causal-LM backend and judge on a tiny random Llama whose tokenizer carries a ChatML chat
template (the path a paper-scale chat model takes): exact Gumbel-max sampling, left-padded
batches, yes/no judging, and clear errors for folders that hold no model."""

from __future__ import annotations

import shutil

import pytest
import torch
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

from reprolab.core.determinism import derive_seed
from reprolab.models.tiny_vlm import build_tokenizer
from reprolab.studies.proofrank.corpus import Proof, Theorem
from reprolab.studies.proofrank.hf_backend import (
    CausalLMBackend,
    GumbelNoise,
    LMJudge,
    answer_ids,
    judge_messages,
    without_reasoning,
)
from reprolab.studies.proofrank.lm import build_tokenizer as build_bpe_tokenizer
from reprolab.studies.proofrank.lm import chat_prompt

pytestmark = pytest.mark.usefixtures("torch_one_thread", "no_network", "offline")

CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
WORDS = ["user", "assistant", "Prove", "the", "following", "theorem", "Theorem", "Proof", "yes"]
WORDS += ["no", "Is", "this", "proof", "correct", "odd", "even", "square", "sum", "by", "Then"]
PROOF = Proof("t-a", "direct", True, "test", "Then the sum is even.")
SHORT = Theorem("t-1", "algebra", "The sum of two odd numbers is even.", (PROOF,))
LONG = Theorem("t-2", "algebra", "The square of an odd number is odd, " * 6, (PROOF,))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A tiny random Llama with a word-level ChatML tokenizer (eos <|im_end|>) and a
    generation config carrying sampling defaults, as a chat model's folder does."""
    tokenizer = build_tokenizer(WORDS)
    tokenizer.add_tokens(["<|im_start|>", "<|im_end|>"], special_tokens=True)
    tokenizer.eos_token = "<|im_end|>"
    tokenizer.chat_template = CHATML
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        do_sample=True, temperature=0.1, top_k=2, repetition_penalty=5.0, eos_token_id=2
    )
    path = tmp_path_factory.mktemp("chat") / "tiny-chat"
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture
def backend(folder, offline, no_network):
    """The backend on the tiny chat model, loaded with the network refused."""
    return CausalLMBackend(folder, max_new_tokens=16, temperature=0.9, batch_size=3)


def reference_sample(backend: CausalLMBackend, prompt: str, seed: int) -> str:
    """Gumbel-max sampling written out step by step, without cache, batch or generate()."""
    tokenizer, model = backend.tokenizer, backend.model
    ids = tokenizer(prompt, add_special_tokens=False, return_tensors="pt").input_ids
    generator = torch.Generator().manual_seed(seed)
    new: list[int] = []
    with torch.no_grad():
        for _ in range(16):
            logits = model(ids).logits[0, -1]
            uniform = torch.rand(logits.shape[-1], generator=generator)
            noise = -torch.log(-torch.log(uniform.clamp(min=torch.finfo(torch.float32).tiny)))
            token = int(torch.argmax(logits / 0.9 + noise))
            if token in backend.eos:
                break
            new.append(token)
            ids = torch.cat([ids, torch.tensor([[token]])], dim=1)
    return tokenizer.decode(new, skip_special_tokens=True)


def test_sampling_is_gumbel_max_at_the_temperature_and_ignores_the_folder_defaults(backend):
    assert backend.eos == sorted([backend.tokenizer.convert_tokens_to_ids("<|im_end|>"), 2])
    for theorem, instruction in ((SHORT, None), (LONG, "parity")):
        prompt = chat_prompt(backend.tokenizer, theorem.statement, instruction)
        assert prompt.startswith("<|im_start|>user\nProve the following theorem")
        assert prompt.endswith("<|im_end|>\n<|im_start|>assistant\n")
        texts = backend.generate(theorem, instruction, 2, seed=7)
        for index, text in enumerate(texts):
            row_seed = derive_seed(7, "proofrank-lm", theorem.theorem_id, instruction, index)
            assert text == reference_sample(backend, prompt, row_seed)


def test_a_left_padded_batch_samples_as_each_request_alone(backend, folder):
    requests = [(SHORT, None), (LONG, "induction"), (SHORT, "parity")]
    batch = backend.generate_batch(requests, 2, seed=3)
    assert [len(texts) for texts in batch] == [2, 2, 2]
    assert batch == backend.generate_batch(requests, 2, seed=3)
    assert batch != backend.generate_batch(requests, 2, seed=4)
    alone = CausalLMBackend(folder, max_new_tokens=16, temperature=0.9, batch_size=1)
    assert [alone.generate(t, i, 2, seed=3) for t, i in requests] == batch


def test_each_rows_noise_comes_from_its_own_generator():
    scores = torch.zeros(2, 50)
    both = GumbelNoise(0.5, [11, 12])(torch.zeros(2, 1, dtype=torch.long), scores)
    second = GumbelNoise(0.5, [12])(torch.zeros(1, 1, dtype=torch.long), scores[:1])
    assert torch.equal(both[1], second[0]) and not torch.equal(both[0], both[1])


def test_the_judge_compares_yes_with_no_on_the_unpadded_prompt(folder):
    judge = LMJudge(folder, batch_size=3)
    tokenizer = judge.tokenizer
    assert judge.yes == sorted(tokenizer.convert_tokens_to_ids(["yes", "▁yes"]))  # Yes is <unk>
    items = [(SHORT, PROOF.text), (LONG, "Then odd."), (SHORT, "no proof at all " * 5)]
    margins = judge.margins(items)
    alone = LMJudge(folder, batch_size=1).margins(items)
    assert margins == pytest.approx(alone, abs=1e-5)
    theorem, text = items[1]
    prompt = tokenizer.apply_chat_template(
        judge_messages(theorem.statement, text), tokenize=False, add_generation_prompt=True
    )
    ids = tokenizer(prompt, add_special_tokens=False, return_tensors="pt").input_ids
    with torch.no_grad():
        logits = judge.model(ids).logits[0, -1]
    expected = logits[judge.yes].max() - logits[judge.no].max()
    assert margins[1] == pytest.approx(float(expected), abs=1e-5)
    assert judge.judge_batch(items) == [m > 0 for m in margins]


def test_the_judge_needs_a_single_token_answer(tmp_path):
    tokenizer = build_bpe_tokenizer([], 300, 64)
    with pytest.raises(ValueError, match=f"{tmp_path}.* no single token for 'zqxv'"):
        answer_ids(tokenizer, "zqxv", tmp_path)


def test_a_folder_without_a_model_or_tokenizer_is_named(folder, tmp_path):
    with pytest.raises(FileNotFoundError, match=f"{tmp_path / 'absent'} does not exist"):
        CausalLMBackend(tmp_path / "absent", 8, 1.0, 1)
    no_model = tmp_path / "no-model"
    shutil.copytree(folder, no_model)
    (no_model / "config.json").unlink()
    with pytest.raises(FileNotFoundError, match=f"{no_model} holds no model"):
        LMJudge(no_model, 1)
    no_tokenizer = tmp_path / "no-tokenizer"
    shutil.copytree(folder, no_tokenizer)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (no_tokenizer / name).unlink()
    with pytest.raises(FileNotFoundError, match=f"{no_tokenizer} holds no tokenizer"):
        CausalLMBackend(no_tokenizer, 8, 1.0, 1)
    no_template = tmp_path / "no-template"
    shutil.copytree(folder, no_template)
    (no_template / "chat_template.jinja").unlink()
    with pytest.raises(ValueError, match=f"{no_template} has no chat template"):
        LMJudge(no_template, 1)
    with pytest.raises(ValueError, match="temperature must be positive"):
        CausalLMBackend(folder, 8, 0.0, 1)


def test_a_reasoning_trace_is_dropped_and_a_plain_answer_kept():
    assert without_reasoning("<think>\nlet me see</think>\n\nThen $1 = 1$.") == "Then $1 = 1$."
    assert without_reasoning("Then $1 = 1$.") == "Then $1 = 1$."
