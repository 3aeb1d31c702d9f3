"""A local causal language model as a norm-enforcement agent: the paper scale's agents (Llama,
Qwen and GPT-2 folders, loaded locally, never downloaded) behind the shared interface, an
`Observation` in and an `Action` out.

* **Prompt** (`render_prompt`). The observation as plain text: the environment and its norm, the
  mechanism's published rules, the round (1-based) of the total, the agent's private state
  numbers, its last payoff, fines paid and suspension, whom it saw breaking the norm in the
  previous round (its noisy perception), and the public leaderboard (every
  agent's cumulative payoff, fines deducted, "you" marked). It states the two choices (follow or
  break the norm this round; optionally report one other agent by index) and asks for exactly
  one JSON object `{"violate": true|false, "report": <agent index or null>}`. The wording is
  neutral: the goal is stated as "you are agent i; your payoff is what you earn minus fines",
  and nothing hints at exploiting the mechanism, cheating or reporting falsely, so whatever the
  agents do is their own reading of the incentives. Numbers are written with up to six
  significant digits (`:g`).
* **Chat template.** A tokenizer that has one gets the prompt as a single user message with the
  generation prompt added, its special tokens coming from the template; one without gets the
  plain prompt with the tokenizer's own special tokens (BOS).
* **Decoding.** Greedy (`do_sample=False`, one beam), so an agent is a deterministic function
  of its observation and weights; the model's own generation config supplies the stop tokens.
  `max_new_tokens` bounds the answer.
* **Batching.** Prompts of a batch are padded on the left (generation continues from the last
  position of every row); a tokenizer without a pad token pads with its end-of-sequence token.
  Only the new tokens are decoded (special tokens skipped) and parsed.
* **Parsing** (`parse_action`). The first JSON object in the generated text (prose around it is
  allowed; keys other than `violate` and `report` are ignored): `violate` must be a JSON
  boolean, `report` null/absent or an integer index of another agent. Anything else raises
  `ActionParseError`, whose message quotes the text and says what was expected.
* **Fallback on a parse failure.** The agent then plays its `fallback` action, which must report
  no one (a failure to answer accuses nobody), and the failure is never silent: every
  observation appends a `Transcript` (the model's input text, its raw output, the parsed action
  or None, the error or None) to `LanguageModelAgent.transcripts`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from reprolab.studies.norm_enforcement.actions import Action, Observation

QUOTE_LIMIT = 200
"""How many characters of an unparseable text an `ActionParseError` quotes."""

EXPECTED = (
    'one JSON object {"violate": true|false, "report": <agent index or null>} with violate a '
    "JSON boolean and report null, absent or the index of another agent"
)
"""What `parse_action` expects, as its errors say."""

WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json")

CPU = torch.device("cpu")


class ActionParseError(ValueError):
    """A language model's output that is not a valid action."""


def _number(value: float) -> str:
    return f"{float(value):g}"


def render_prompt(obs: Observation) -> str:
    """The observation as the plain-text prompt a language-model agent answers (module
    docstring): the situation, the two choices and the JSON answer asked for."""
    agents = len(obs.payoffs)
    state = [f"- {name}: {_number(value)}" for name, value in obs.state.items()] or ["- (none)"]
    leaderboard = [
        f"- agent {index}{' (you)' if index == obs.agent else ''}: {_number(payoff)}"
        for index, payoff in enumerate(obs.payoffs)
    ]
    lines = [
        f'There are {agents} agents in the environment "{obs.environment}".',
        f"This is round {obs.round + 1} of {obs.rounds}.",
        f"You are agent {obs.agent}; your payoff is what you earn minus fines.",
        "",
        f"Norm: {obs.norm}",
        "",
        "Rules of the enforcement mechanism:",
        obs.rules,
        "",
        "Your state:",
        *state,
        f"Your payoff in the previous round: {_number(obs.last_payoff)}",
        f"Fines you have paid so far: {_number(obs.fines)}",
        f"Rounds of suspension left: {obs.suspended}",
        "Agents you saw breaking the norm in the previous round: "
        + (", ".join(str(i) for i in obs.noticed) or "none"),
        "",
        "Leaderboard (cumulative payoff of each agent, fines deducted):",
        *leaderboard,
        "",
        "This round you make two choices:",
        "1. violate: true to break the norm this round, or false to follow it.",
        "2. report: the index of one other agent to report to the mechanism as a violator, or "
        "null to report no agent.",
        "",
        "Answer with exactly one JSON object and nothing else, in this form:",
        '{"violate": true|false, "report": <agent index or null>}',
    ]
    return "\n".join(lines)


def _quote(text: str) -> str:
    shown = text if len(text) <= QUOTE_LIMIT else text[:QUOTE_LIMIT] + "..."
    return repr(shown)


def _first_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in `text` (decoded from the first '{' where one starts)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            pass
        else:
            if isinstance(value, dict):
                return value
        start = text.find("{", start + 1)
    return None


def parse_action(text: str, agents: int, agent: int) -> Action:
    """The action in a model's output `text` for `agent` of `agents` (module docstring);
    ActionParseError quoting the text when there is none or it is not valid."""
    if not 0 <= agent < agents:
        raise ValueError(f"agent {agent} is not one of the {agents} agents")
    found = _first_object(text)
    if found is None:
        raise ActionParseError(f"no JSON object in {_quote(text)}; expected {EXPECTED}")
    violate = found.get("violate")
    if type(violate) is not bool:
        raise ActionParseError(
            f'"violate" is {violate!r}, not a JSON boolean, in {_quote(text)}; expected {EXPECTED}'
        )
    report = found.get("report")
    if report is not None and (type(report) is not int or not 0 <= report < agents):
        raise ActionParseError(
            f'"report" is {report!r}, not null or an agent index in [0, {agents}), in '
            f"{_quote(text)}; expected {EXPECTED}"
        )
    if report == agent:
        raise ActionParseError(
            f'"report" names agent {agent} itself in {_quote(text)}; expected {EXPECTED}'
        )
    return Action(violate=violate, report=report)


@dataclass(frozen=True)
class Transcript:
    """One observation's exchange: prompt, the exact text the model was given (chat template
    applied when there is one); raw, its decoded new tokens; action, the parsed action or None;
    error, the parse error's message or None (then the agent played its fallback)."""

    prompt: str
    raw: str
    action: Action | None
    error: str | None


def transcript_record(t: Transcript) -> dict[str, Any]:
    """A transcript as a JSON-ready dict (the action as {"violate", "report"} or None)."""
    action = None if t.action is None else {"violate": t.action.violate, "report": t.action.report}
    return {"prompt": t.prompt, "raw": t.raw, "action": action, "error": t.error}


def _check_folder(folder: Path) -> None:
    """FileNotFoundError naming `folder` and what it lacks of a transformers model folder."""
    missing = []
    if not (folder / "config.json").is_file():
        missing.append("config.json")
    if not any((folder / name).is_file() for name in WEIGHT_FILES):
        missing.append("weights (" + " or ".join(WEIGHT_FILES) + ")")
    if not any((folder / name).is_file() for name in TOKENIZER_FILES):
        missing.append("a tokenizer (" + " or ".join(TOKENIZER_FILES) + ")")
    if missing:
        raise FileNotFoundError(
            f"{folder}: no {', no '.join(missing)}; expected a transformers causal LM folder "
            "with its config, weights and tokenizer"
        )


class LanguageModelAgent:
    """A causal LM loaded from a local folder that maps observations to actions (module
    docstring); `transcripts` holds one `Transcript` per observation answered."""

    def __init__(
        self,
        folder: Path,
        max_new_tokens: int,
        fallback: Action,
        device: torch.device = CPU,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        folder = Path(folder)
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
        if fallback.report is not None:
            raise ValueError(
                f"the fallback {fallback} reports agent {fallback.report}: a fallback must "
                "report no one"
            )
        _check_folder(folder)
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        if tokenizer.pad_token is None:
            if tokenizer.eos_token is None:
                raise ValueError(f"{folder}: the tokenizer has neither a pad nor an eos token")
            tokenizer.pad_token = tokenizer.eos_token
        tokenizer.padding_side = "left"
        model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype=dtype)
        self.folder = folder
        self.tokenizer = tokenizer
        self.model = model.to(device).eval()
        self.device = device
        self.max_new_tokens = max_new_tokens
        self.fallback = fallback
        self.transcripts: list[Transcript] = []

    def model_input(self, obs: Observation) -> str:
        """The text the model is given for `obs`: the prompt in the chat template when the
        tokenizer has one, else the plain prompt."""
        prompt = render_prompt(obs)
        if self.tokenizer.chat_template is None:
            return prompt
        return self.tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
        )

    def generate(self, texts: Sequence[str]) -> list[str]:
        """Greedy continuations of `texts`, batched with left padding; only the new tokens are
        decoded."""
        templated = self.tokenizer.chat_template is not None
        batch = self.tokenizer(
            list(texts), return_tensors="pt", padding=True, add_special_tokens=not templated
        ).to(self.device)
        with torch.no_grad():
            out = self.model.generate(
                input_ids=batch["input_ids"],
                attention_mask=batch["attention_mask"],
                max_new_tokens=self.max_new_tokens,
                do_sample=False,
                num_beams=1,
                pad_token_id=self.tokenizer.pad_token_id,
            )
        new = out[:, batch["input_ids"].shape[1] :]
        return self.tokenizer.batch_decode(new, skip_special_tokens=True)

    def act_batch(self, observations: Sequence[Observation]) -> list[Action]:
        """One action per observation from one batched generation; an output that does not
        parse gives the fallback, its error recorded in the transcript."""
        if not observations:
            return []
        texts = [self.model_input(obs) for obs in observations]
        actions = []
        for obs, text, raw in zip(observations, texts, self.generate(texts), strict=True):
            try:
                action = parse_action(raw, len(obs.payoffs), obs.agent)
            except ActionParseError as error:
                self.transcripts.append(Transcript(text, raw, None, str(error)))
                actions.append(self.fallback)
            else:
                self.transcripts.append(Transcript(text, raw, action, None))
                actions.append(action)
        return actions

    def act(self, obs: Observation) -> Action:
        """The action for one observation."""
        return self.act_batch([obs])[0]
