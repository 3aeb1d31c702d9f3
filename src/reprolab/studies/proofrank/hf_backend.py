"""A `transformers` causal LM as a proof generator (`CausalLMBackend`) or correctness judge
(`LMJudge`), loaded from a local model folder.

The same classes run the tiny LMs the workflow trains (studies.proofrank.lm) and, at paper
scale, chat models such as Qwen2.5-Math-7B-Instruct from their downloaded folders.

Choices:

* Loading: `AutoTokenizer` / `AutoModelForCausalLM` with ``local_files_only=True``; nothing is
  fetched. A missing folder, or one without a model config, weights or tokenizer, is an error
  naming the folder; so is a tokenizer without a chat template.
* Prompts: `lm.prompt_messages` through the tokenizer's chat template with the generation
  prompt (`lm.chat_prompt`), encoded without added special tokens (the template writes any
  bos). Batches are left-padded (pad token, or eos when the tokenizer has none).
* Sampling: each sequence gets its own CPU `torch.Generator`, seeded by
  ``derive_seed(seed, "proofrank-lm", theorem_id, instruction, sample index)``. At each step
  the logits are divided by the temperature and Gumbel noise from that generator is added,
  then the argmax is taken (greedy decoding): the Gumbel-max trick, an exact draw from the
  softmax at that temperature. A sequence's noise therefore does not depend on the rest of
  the batch, and the same folder, requests, n, seed and batch size give byte-identical texts
  (a different batch size changes padding, hence float rounding of the logits, and may flip a
  near-tie). No top-k, top-p or repetition penalty: the folder's generation_config.json (e.g.
  Qwen's sampling defaults) is replaced by a plain one, so sampling is the same for every
  model.
* Stopping: at the tokenizer's eos or any eos of the folder's generation config (Qwen's chat
  models end a turn with ``<|im_end|>``), or after `max_new_tokens`. The text is the tokens
  before the first eos, decoded with special tokens skipped; a reasoning model's trace (up to
  the last ``</think>``) is dropped, since the proxies score the proof. Prompts ask templates
  that have the switch (Qwen3) to answer without one.
* Judging: a chat prompt showing theorem and proof and asking for yes or no; the verdict is
  "correct" when the largest next-token logit among the single-token spellings of "yes"
  ("yes", " yes", "Yes", " Yes") exceeds the largest among those of "no" (a tie is "no").
  The template gets ``enable_thinking=False`` (templates without the switch ignore it), so a
  reasoning model such as Qwen3 is asked for its answer at once, not for a reasoning trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    GenerationConfig,
    LogitsProcessor,
    LogitsProcessorList,
    PreTrainedModel,
)

from reprolab.core.determinism import derive_seed, resolve_device
from reprolab.studies.proofrank.corpus import Theorem
from reprolab.studies.proofrank.lm import chat_prompt

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")
THINK_END = "</think>"
"""Where a reasoning model's trace ends (Qwen3, DeepSeek-R1 distills): the proof is what follows."""
JUDGE_QUESTION = "Is this proof correct and complete? Answer with one word: yes or no."


def load_local(folder: str | Path, device: str, dtype: str) -> tuple[Any, PreTrainedModel]:
    """The tokenizer (left padding, a pad token) and the causal LM (eval mode, on `device`)
    saved in `folder`; FileNotFoundError / ValueError naming the folder when it lacks one."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"model folder {folder} does not exist")
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(f"model folder {folder} holds no model (no config.json)")
    if not any((folder / name).is_file() for name in TOKENIZER_FILES):
        raise FileNotFoundError(
            f"model folder {folder} holds no tokenizer (none of {list(TOKENIZER_FILES)})"
        )
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    if not tokenizer.chat_template:
        raise ValueError(f"the tokenizer in {folder} has no chat template")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=DTYPES[dtype], local_files_only=True)
    return tokenizer, model.to(resolve_device(device)).eval()


def eos_ids(tokenizer: Any, model: PreTrainedModel) -> list[int]:
    """The token ids that end an answer: the tokenizer's eos and the model's generation eos."""
    configured = model.generation_config.eos_token_id
    configured = configured if isinstance(configured, list) else [configured]
    return sorted({tokenizer.eos_token_id, *configured} - {None})


def encode_prompts(tokenizer: Any, prompts: Sequence[str], device: torch.device) -> dict:
    """The left-padded batch of `prompts` (input_ids, attention_mask) on `device`."""
    batch = tokenizer(list(prompts), padding=True, add_special_tokens=False, return_tensors="pt")
    return {key: value.to(device) for key, value in batch.items()}


def without_reasoning(text: str) -> str:
    """The answer after a reasoning trace (what follows the last THINK_END); the text itself
    when there is no trace."""
    return text.rsplit(THINK_END, 1)[-1].lstrip("\n")


class GumbelNoise(LogitsProcessor):
    """Logits / temperature + Gumbel noise, row i's noise drawn from generator i (so argmax
    samples from the tempered softmax, each row independently of the others)."""

    def __init__(self, temperature: float, seeds: Sequence[int]):
        self.temperature = temperature
        self.generators = [torch.Generator().manual_seed(seed) for seed in seeds]

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.Tensor:
        """The noisy tempered scores of one decoding step."""
        width = scores.shape[-1]
        tiny = torch.finfo(torch.float32).tiny
        uniform = torch.stack([torch.rand(width, generator=g) for g in self.generators])
        noise = -torch.log(-torch.log(uniform.clamp_(min=tiny)))
        return scores.float() / self.temperature + noise.to(scores.device)


class CausalLMBackend:
    """Proofs sampled from a local causal chat LM (the backends.Backend protocol)."""

    def __init__(
        self,
        folder: str | Path,
        max_new_tokens: int,
        temperature: float,
        batch_size: int,
        device: str = "cpu",
        dtype: str = "float32",
    ):
        """Load the model in `folder`; `device` is a torch device name or ``auto``, `dtype`
        one of ``float32``, ``bfloat16``, ``float16``."""
        if max_new_tokens < 1 or batch_size < 1:
            raise ValueError(
                f"max_new_tokens ({max_new_tokens}) and batch_size ({batch_size}) must be positive"
            )
        if not temperature > 0:
            raise ValueError(f"temperature must be positive, got {temperature!r}")
        self.tokenizer, self.model = load_local(folder, device, dtype)
        self.temperature, self.batch_size = temperature, batch_size
        self.eos = eos_ids(self.tokenizer, self.model)
        self.model.generation_config = GenerationConfig(
            do_sample=False,
            max_new_tokens=max_new_tokens,
            eos_token_id=self.eos,
            pad_token_id=self.tokenizer.pad_token_id,
        )

    def generate(self, theorem: Theorem, instruction: str | None, n: int, seed: int) -> list[str]:
        """`n` proofs of `theorem`, by the technique `instruction` (None: any)."""
        return self.generate_batch([(theorem, instruction)], n, seed)[0]

    def generate_batch(
        self, requests: Sequence[tuple[Theorem, str | None]], n: int, seed: int
    ) -> list[list[str]]:
        """`n` proofs for each (theorem, instruction) request, sampled `batch_size` at a time;
        each text is the same as `generate` gives for its request alone, up to float rounding
        of a different padding."""
        if n < 1:
            raise ValueError(f"n must be positive, got {n}")
        rows = [(theorem, instruction, k) for theorem, instruction in requests for k in range(n)]
        texts: list[str] = []
        for start in range(0, len(rows), self.batch_size):
            chunk = rows[start : start + self.batch_size]
            prompts = [chat_prompt(self.tokenizer, t.statement, i) for t, i, _ in chunk]
            seeds = [derive_seed(seed, "proofrank-lm", t.theorem_id, i, k) for t, i, k in chunk]
            texts += self.sample(prompts, seeds)
        return [texts[index * n : (index + 1) * n] for index in range(len(requests))]

    @torch.inference_mode()
    def sample(self, prompts: Sequence[str], seeds: Sequence[int]) -> list[str]:
        """One sampled answer per prompt, row i's noise from seed i."""
        batch = encode_prompts(self.tokenizer, prompts, self.model.device)
        output = self.model.generate(
            **batch,
            generation_config=self.model.generation_config,
            logits_processor=LogitsProcessorList([GumbelNoise(self.temperature, seeds)]),
        )
        return [self.decode(row) for row in output[:, batch["input_ids"].shape[1] :].tolist()]

    def decode(self, ids: list[int]) -> str:
        """The text of the tokens before the first eos, special tokens skipped, without a
        reasoning trace (what precedes the last THINK_END)."""
        end = next((index for index, token in enumerate(ids) if token in self.eos), len(ids))
        return without_reasoning(self.tokenizer.decode(ids[:end], skip_special_tokens=True))


def judge_messages(statement: str, proof: str) -> list[dict[str, str]]:
    """The chat messages asking whether `proof` proves `statement`."""
    content = f"Theorem: {statement}\n\nProof:\n{proof}\n\n{JUDGE_QUESTION}"
    return [{"role": "user", "content": content}]


def answer_ids(tokenizer: Any, word: str, folder: Path) -> list[int]:
    """The ids of the single-token spellings of `word` (bare or after a space, lower case or
    capitalised); ValueError naming the folder when there is none."""
    spellings = (word, " " + word, word.capitalize(), " " + word.capitalize())
    encoded = [tokenizer.encode(s, add_special_tokens=False) for s in spellings]
    unknown = tokenizer.unk_token_id
    ids = sorted({tokens[0] for tokens in encoded if len(tokens) == 1 and tokens[0] != unknown})
    if not ids:
        raise ValueError(
            f"the tokenizer in {folder} has no single token for {word!r} in any of "
            f"{list(spellings)}; the judge cannot read its answer"
        )
    return ids


class LMJudge:
    """A local chat LM asked whether each proof is correct, answered by its next-token logits
    for "yes" against "no"."""

    def __init__(
        self, folder: str | Path, batch_size: int, device: str = "cpu", dtype: str = "float32"
    ):
        """Load the model in `folder` (see `CausalLMBackend` for `device` and `dtype`)."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.tokenizer, self.model = load_local(folder, device, dtype)
        self.batch_size = batch_size
        self.yes = answer_ids(self.tokenizer, "yes", Path(folder))
        self.no = answer_ids(self.tokenizer, "no", Path(folder))

    def judge_batch(self, items: Sequence[tuple[Theorem, str]]) -> list[bool]:
        """Whether the model judges each (theorem, proof text) correct: "yes" outscores "no"."""
        return [margin > 0 for margin in self.margins(items)]

    def margins(self, items: Sequence[tuple[Theorem, str]]) -> list[float]:
        """For each (theorem, proof text), the best next-token logit of a "yes" spelling minus
        the best of a "no" spelling, `batch_size` items at a time."""
        margins: list[float] = []
        for start in range(0, len(items), self.batch_size):
            prompts = [
                self.tokenizer.apply_chat_template(
                    judge_messages(theorem.statement, proof),
                    tokenize=False,
                    add_generation_prompt=True,
                    enable_thinking=False,
                )
                for theorem, proof in items[start : start + self.batch_size]
            ]
            margins += self.prompt_margins(prompts)
        return margins

    @torch.inference_mode()
    def prompt_margins(self, prompts: Sequence[str]) -> list[float]:
        """The yes-minus-no next-token logit margin of each prompt, in one left-padded batch
        (positions counted from each prompt's first real token, as unpadded)."""
        batch = encode_prompts(self.tokenizer, prompts, self.model.device)
        positions = (batch["attention_mask"].cumsum(-1) - 1).clamp(min=0)
        logits = self.model(**batch, position_ids=positions, logits_to_keep=1).logits[:, -1]
        logits = logits.float()
        yes = logits[:, self.yes].max(dim=-1).values
        no = logits[:, self.no].max(dim=-1).values
        return (yes - no).tolist()
