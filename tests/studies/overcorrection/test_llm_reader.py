"""The language-model reader on tiny Llama (grouped-query, rotary) and GPT-2 models built from
configs and saved to a folder, loaded with the network refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM

from reprolab.models.tiny_vlm import build_tokenizer
from reprolab.studies.overcorrection.llm_reader import LanguageModelReader, label_token_ids
from tests.studies.overcorrection.fixtures import save_tiny_lm

WORDS = "the film was great awful dull fun a plot Input Answer : positive negative".split()
LABELS = ("negative", "positive")
ITEMS = [("the film was great", 1), ("a dull plot", 0), ("fun", 1)]
QUERY = "the plot was awful"

pytestmark = pytest.mark.usefixtures("torch_one_thread")


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def folder(request, tmp_path_factory) -> Path:
    return save_tiny_lm(tmp_path_factory.mktemp(request.param), request.param, WORDS)


def test_answer_is_the_models_own_label_word_softmax(folder: Path, no_network):
    reader = LanguageModelReader.from_folder(folder, LABELS)
    reading = reader.read(ITEMS, QUERY)
    plain = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True).eval()
    ids, _ = reader.encode(ITEMS, QUERY)
    with torch.no_grad():
        logits = plain(torch.tensor([ids])).logits[0, -1]
    expected = torch.softmax(logits[reader.label_ids].double(), -1).numpy()
    np.testing.assert_allclose(reading.answer, expected, atol=1e-6)
    assert reading.keys.shape[0] == len(ITEMS) and reading.keys.shape[1:] == reading.query.shape


def test_captured_queries_and_keys_give_the_layers_attention(folder: Path):
    """Rotary embedding, grouped keys and scaling as the layer uses them: the attention mass
    computed from the captured states equals the eager layer's own weights."""
    reader = LanguageModelReader.from_folder(folder, LABELS)
    reading = reader.read(ITEMS, QUERY)
    eager = AutoModelForCausalLM.from_pretrained(
        folder, local_files_only=True, attn_implementation="eager"
    ).eval()
    ids, spans = reader.encode(ITEMS, QUERY)
    with torch.no_grad():
        weights = eager(torch.tensor([ids]), output_attentions=True).attentions[-1][0, :, -1]
    expected = [float(weights[:, a:b].sum(-1).mean()) for a, b in spans]
    np.testing.assert_allclose(reading.attention, expected, atol=1e-5)
    key_of_last = [end - 1 for _, end in spans]
    assert np.all(np.isfinite(reading.keys)) and len(key_of_last) == len(ITEMS)


def test_a_zero_readout_query_attends_uniformly(folder: Path):
    """The known case: with the readout layer's queries zeroed every position gets the same
    weight, so an item's mass is its share of the prompt's tokens."""
    reader = LanguageModelReader.from_folder(folder, LABELS)
    with torch.no_grad():
        if hasattr(reader.readout, "q_proj"):
            reader.readout.q_proj.weight.zero_()
        else:  # GPT-2: the first third of c_attn projects queries
            width = reader.readout.c_attn.weight.shape[0]
            reader.readout.c_attn.weight[:, :width].zero_()
            reader.readout.c_attn.bias[:width].zero_()
    ids, spans = reader.encode(ITEMS, QUERY)
    reading = reader.read(ITEMS, QUERY)
    np.testing.assert_allclose(reading.attention, [(b - a) / len(ids) for a, b in spans], atol=1e-9)


def test_spans_cover_each_demonstration(folder: Path):
    reader = LanguageModelReader.from_folder(folder, LABELS)
    ids, spans = reader.encode(ITEMS, QUERY)
    for (text, label), (start, end) in zip(ITEMS, spans, strict=True):
        decoded = reader.tokenizer.decode(ids[start:end])
        assert decoded.strip() == f"Input: {text}\nAnswer: {LABELS[label]}"
    assert ids[spans[-1][1] - 1] == reader.label_ids[ITEMS[-1][1]]


def test_label_words_sharing_a_first_token_are_refused():
    tokenizer = build_tokenizer(["great", "great fun"])
    with pytest.raises(ValueError, match="share a first token"):
        label_token_ids(tokenizer, ["great", "great fun"])


def test_a_folder_without_a_model_is_named(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        LanguageModelReader.from_folder(tmp_path, LABELS)
