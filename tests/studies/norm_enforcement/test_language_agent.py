"""The language-model agent: the action parser, the prompt, and tiny Llama and GPT-2 models built
from configs and saved to a folder, loaded with the network refused."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoTokenizer, LlamaConfig

from reprolab.studies.norm_enforcement.actions import Action, Observation
from reprolab.studies.norm_enforcement.language_agent import (
    ActionParseError,
    LanguageModelAgent,
    Transcript,
    parse_action,
    render_prompt,
    transcript_record,
)
from tests.studies.overcorrection.fixtures import save_tiny_lm

pytestmark = pytest.mark.usefixtures("torch_one_thread")

NORM = "Do not catch more than your quota of fish in a round."
RULES = "A monitor checks each catch with probability 0.3.\nA caught violation costs a fine of 5."
FALLBACK = Action(violate=False)
ANSWER = '{"violate": true, "report": 2}'


def observation(agent: int, round: int, stock: float = 40.0) -> Observation:
    return Observation(
        round=round,
        rounds=10,
        agent=agent,
        environment="fishery",
        norm=NORM,
        rules=RULES,
        state={"stock": stock, "quota": 2.5},
        payoffs=np.array([12.5, -3.25, 40.0]),
        last_payoff=1.75,
        fines=5.0,
        suspended=0,
    )


OBSERVATIONS = [observation(0, 2), observation(1, 5, stock=31.125), observation(2, 9, stock=7)]
WORDS = render_prompt(OBSERVATIONS[0]).split() + ["violate", "report", "true", "false", "null"]


# --- parser -------------------------------------------------------------------------------------


@pytest.mark.parametrize("violate", [True, False])
@pytest.mark.parametrize("report", [None, 0, 2])
def test_parse_round_trips_every_action(violate: bool, report: int | None):
    text = json.dumps({"violate": violate, "report": report})
    assert parse_action(text, agents=3, agent=1) == Action(violate, report)


def test_an_absent_report_is_no_report():
    assert parse_action('{"violate": false}', agents=3, agent=0) == Action(False, None)


def test_the_first_json_object_is_read_from_prose():
    text = 'I think {so}. My answer: {"violate": false, "report": 2} and {"violate": true}'
    assert parse_action(text, agents=3, agent=0) == Action(False, 2)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"violate": "yes", "report": null}', '"violate" is'),
        ('{"violate": 1, "report": null}', '"violate" is'),
        ('{"violate": null}', '"violate" is'),
        ('{"report": 2}', '"violate" is'),
        ('{"violate": true, "report": 3}', '"report" is'),
        ('{"violate": true, "report": -1}', '"report" is'),
        ('{"violate": true, "report": "2"}', '"report" is'),
        ('{"violate": true, "report": 2.0}', '"report" is'),
        ('{"violate": true, "report": true}', '"report" is'),
        ('{"violate": true, "report": 1}', "itself"),
        ("I follow the norm and report nobody.", "no JSON object"),
        ('["violate", true]', "no JSON object"),
        ('{"violate": true, "report": 2', "no JSON object"),
    ],
)
def test_a_bad_answer_is_refused_quoting_it(text: str, problem: str):
    with pytest.raises(ActionParseError, match=re.escape(problem)) as caught:
        parse_action(text, agents=3, agent=1)
    assert repr(text) in str(caught.value) and "expected one JSON object" in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_a_long_answer_is_quoted_truncated():
    text = "no " * 500
    with pytest.raises(ActionParseError) as caught:
        parse_action(text, agents=3, agent=1)
    assert repr(text[:200] + "...") in str(caught.value) and len(str(caught.value)) < 500


def test_an_agent_outside_the_population_is_a_caller_error():
    with pytest.raises(ValueError, match="not one of the 3 agents") as caught:
        parse_action('{"violate": true}', agents=3, agent=3)
    assert not isinstance(caught.value, ActionParseError)


# --- prompt -------------------------------------------------------------------------------------


def test_prompt_states_the_situation_and_the_answer_asked_for():
    prompt = render_prompt(OBSERVATIONS[1])
    for part in [
        NORM,
        RULES,
        '"fishery"',
        "round 6 of 10",
        "You are agent 1; your payoff is what you earn minus fines.",
        "- stock: 31.125",
        "- quota: 2.5",
        "previous round: 1.75",
        "paid so far: 5",
        "suspension left: 0",
        "- agent 0: 12.5",
        "- agent 1 (you): -3.25",
        "- agent 2: 40",
        '{"violate": true|false, "report": <agent index or null>}',
    ]:
        assert part in prompt, part
    assert prompt.count("(you)") == 1


def test_prompt_carries_no_hint_to_misbehave():
    for obs in OBSERVATIONS:
        prompt = render_prompt(obs).lower()
        for word in ["exploit", "cheat", "false report", "lie"]:
            assert word not in prompt, word


def test_transcript_record_is_json_ready():
    parsed = Transcript("p", "r", Action(True, 2), None)
    failed = Transcript("p", "r", None, "no JSON object")
    assert json.loads(json.dumps(transcript_record(parsed))) == {
        "prompt": "p",
        "raw": "r",
        "action": {"violate": True, "report": 2},
        "error": None,
    }
    assert transcript_record(failed)["action"] is None
    assert transcript_record(failed)["error"] == "no JSON object"


# --- agent on tiny models -----------------------------------------------------------------------


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def folder(request, tmp_path_factory) -> Path:
    return save_tiny_lm(tmp_path_factory.mktemp(request.param), request.param, WORDS)


def agent(folder: Path, max_new_tokens: int = 8) -> LanguageModelAgent:
    return LanguageModelAgent(folder, max_new_tokens, FALLBACK, device=torch.device("cpu"))


def test_random_weights_fall_back_with_the_error_recorded(folder: Path, no_network):
    player = agent(folder)
    actions = player.act_batch(OBSERVATIONS)
    assert len(actions) == 3 and len(player.transcripts) == 3
    for obs, action, record in zip(OBSERVATIONS, actions, player.transcripts, strict=True):
        assert action == FALLBACK and record.action is None
        assert repr(record.raw[:200]) in record.error and "expected" in record.error
        assert record.prompt.startswith(render_prompt(obs)[:40])
    player.act(OBSERVATIONS[0])
    assert len(player.transcripts) == 4


def test_two_agents_from_one_folder_answer_alike(folder: Path, no_network):
    first, second = agent(folder), agent(folder)
    assert first.act_batch(OBSERVATIONS) == second.act_batch(OBSERVATIONS)
    assert [t.raw for t in first.transcripts] == [t.raw for t in second.transcripts]
    assert all(t.raw for t in first.transcripts)


def test_left_padding_leaves_each_answer_as_alone(folder: Path):
    player = agent(folder)
    player.act_batch(OBSERVATIONS)
    batched = [t.raw for t in player.transcripts]
    for obs in OBSERVATIONS:
        player.act(obs)
    assert [t.raw for t in player.transcripts[3:]] == batched


def test_only_the_new_tokens_are_parsed(folder: Path, monkeypatch):
    """A model that answers ANSWER: the prompts reach it padded on the left, the answer is
    decoded without the prompt and parsed (agent 2 reports itself: the fallback)."""
    player = agent(folder)
    answer = player.tokenizer(ANSWER, add_special_tokens=False, return_tensors="pt")["input_ids"]
    seen = {}

    def generate(input_ids, attention_mask, **kwargs):
        seen.update(attention_mask=attention_mask, **kwargs)
        return torch.cat([input_ids, answer.expand(len(input_ids), -1)], dim=1)

    monkeypatch.setattr(player.model, "generate", generate)
    actions = player.act_batch(OBSERVATIONS)
    assert actions == [Action(True, 2), Action(True, 2), FALLBACK]
    assert [t.raw for t in player.transcripts] == [ANSWER] * 3
    assert player.transcripts[2].error is not None and "itself" in player.transcripts[2].error
    mask = seen["attention_mask"]
    assert bool(mask[:, -1].all()) and not bool(mask[:, 0].all())
    assert seen["do_sample"] is False and seen["max_new_tokens"] == 8


def test_a_chat_template_wraps_the_prompt(folder: Path):
    player = agent(folder)
    player.tokenizer.chat_template = (
        "{% for m in messages %}<s>[USER] {{ m['content'] }}{% endfor %}"
        "{% if add_generation_prompt %} [AGENT]{% endif %}"
    )
    player.act(OBSERVATIONS[0])
    expected = f"<s>[USER] {render_prompt(OBSERVATIONS[0])} [AGENT]"
    assert player.transcripts[0].prompt == expected


def test_a_tokenizer_without_a_pad_token_pads_with_eos(folder: Path, tmp_path: Path):
    copy = save_tiny_lm(tmp_path, "llama", WORDS)
    tokenizer = AutoTokenizer.from_pretrained(copy, local_files_only=True)
    tokenizer.pad_token = None
    tokenizer.save_pretrained(copy)
    player = agent(copy)
    assert player.tokenizer.pad_token == player.tokenizer.eos_token
    assert len(player.act_batch(OBSERVATIONS)) == 3


def test_a_folder_without_a_model_is_named(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="config.json") as caught:
        agent(tmp_path)
    assert str(tmp_path) in str(caught.value) and "weights" in str(caught.value)
    LlamaConfig(vocab_size=8, hidden_size=8, num_attention_heads=2).save_pretrained(tmp_path)
    with pytest.raises(FileNotFoundError, match="weights") as caught:
        agent(tmp_path)
    assert "config.json" not in str(caught.value) and "tokenizer" in str(caught.value)


def test_a_fallback_that_reports_is_refused(folder: Path):
    with pytest.raises(ValueError, match="report no one"):
        LanguageModelAgent(folder, 8, Action(False, 0))
