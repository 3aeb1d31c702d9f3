"""hiccr's jobs: the supervised warm start with its gates, the RL runs, and the base algorithms'
tuning.

* `warm_start` (one job): a tiny LLaVA built from params (a word-level tokenizer of the
  stream's words) is trained for `sft.steps` steps on the `sft` demonstrations, whose reading
  is wrong at `sft.corruption` (`corrupted`: the card's warm start, a model that has learnt the
  format and the arithmetic but reads with a guesser's noise, which RL can then sharpen). Then
  the card's gates must hold on the gate items (never the test items): greedy accuracy inside
  `sft.gate.accuracy` and functional dependence at least `sft.gate.min_dependence`; otherwise
  the job fails naming what it measured, and no RL job starts. The checkpoint is saved with
  `save_pretrained` and is every run's and every seed's starting point, as a released SFT model
  is at paper scale; its record holds the gates, the accuracy of sampled answers (the reward RL
  starts from) and the checkpoint's test metrics (the "before RL" row of every grounding
  comparison).
* `rl_run`: `rl.steps` steps of a row from the checkpoint, at a learning rate; prompts are drawn
  from the `rl` training items by the seed, rollouts sampled and weights' noise drawn from
  generators of the seed (the same prompts and the same sampling stream for every row of a seed:
  common random numbers). Every `rl.eval_every` steps the curve items are evaluated.
* `run_seed` (one job per row and seed): `rl_run` at the base algorithm's tuned learning rate,
  then the test metrics. `tune_base` (one job per base algorithm): `rl_run` of the base row at
  every grid learning rate on the tuning seeds, scored by accuracy on the gate items. The rows
  built on a base (random, token, trajectory, HiCCR) use its learning rate: HiCCR's weights keep
  each rollout's total credit, so the step size means the same, and a rate tuned for the
  baseline favours the baseline, never the method.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import LlavaForConditionalGeneration, LlavaProcessor

from reprolab.core.determinism import derive_seed, seed_everything
from reprolab.core.io import read_json, write_h5, write_json
from reprolab.core.progress import progress
from reprolab.core.tuning import selected, tune, write_tuning
from reprolab.models.tiny_vlm import (
    BOS,
    IMAGE,
    PAD,
    UNK,
    build_tiny_llava,
    build_tokenizer,
    save_tiny_vlm,
    tokens_per_image,
)
from reprolab.preprocess.instr.stream import load_stream
from reprolab.preprocess.instr.visarith import chain_answer, parse_chain
from reprolab.studies.hiccr.cost import count_operations
from reprolab.studies.hiccr.credit import CreditConfig
from reprolab.studies.hiccr.data import Split, VisArithData, answer_ids, load_visarith, prompt_ids
from reprolab.studies.hiccr.evaluate import Grounding, evaluate, sampled_accuracy
from reprolab.studies.hiccr.policy import VisionPolicy
from reprolab.studies.hiccr.rows import ROWS, Row
from reprolab.studies.hiccr.train import (
    RLSettings,
    Rollouts,
    rl_step,
    sample_rollouts,
    supervised_step,
    update_loss,
)
from reprolab.studies.vngct.data import stream_vocabulary

STUDY = "hiccr"
PIXEL_MEAN_STD = (0.5, 0.5)
"""The processor's normalisation: grey levels to [-1, 1], as `data.pixel_values` does."""
TUNE_METRIC = "accuracy on the gate items (sft/test) after RL"
log = logging.getLogger(__name__)


class GateError(RuntimeError):
    """The warm start missed the card's gates: RL would start from a model unfit for it."""


def make_policy(model: LlavaForConditionalGeneration, tokenizer: Any) -> VisionPolicy:
    """The policy view of `model` for VisArith prompts (fixed answer length)."""
    banned = tokenizer.convert_tokens_to_ids([PAD, BOS, UNK, IMAGE])
    length = answer_ids(tokenizer, ["see 0 0 0 0 , 0 + 0 = 0 , 0 + 0 = 0 , 0 + 0 = 0 , so 0"])
    prompt = prompt_ids(tokenizer, tokens_per_image(model.config))
    return VisionPolicy(model, prompt, int(length.shape[1]), tokenizer.eos_token_id, banned)


def build_policy(
    spec: Mapping[str, Any], tokenizer: Any, image_size: int, seed: int
) -> tuple[VisionPolicy, LlavaProcessor]:
    """A seeded random tiny LLaVA of params `model` (eager attention) as a policy, and its
    processor."""
    model, processor = build_tiny_llava(
        tokenizer,
        seed=seed,
        image_size=image_size,
        patch_size=int(spec["patch_size"]),
        hidden=int(spec["hidden"]),
        layers=int(spec["layers"]),
        heads=int(spec["heads"]),
        pixel_mean_std=PIXEL_MEAN_STD,
    )
    model.set_attn_implementation("eager")
    return make_policy(model, tokenizer), processor


def first_rollouts(
    policy: VisionPolicy, tokenizer: Any, settings: RLSettings, split: Split, count: int, seed: int
) -> Rollouts:
    """Rollouts of the first `count` prompts of `split`, sampled from a generator of `seed`: the
    batch the overhead and the zero-strength checks are measured on."""
    return sample_rollouts(
        policy,
        tokenizer,
        settings,
        split.pixels[:count],
        split.conclusions[:count],
        torch.Generator().manual_seed(derive_seed(seed, STUDY, "check")),
    )


def load_checkpoint(folder: str | Path) -> tuple[VisionPolicy, Any]:
    """The policy and tokenizer of a saved checkpoint, from the folder only."""
    processor = LlavaProcessor.from_pretrained(folder, local_files_only=True)
    model = LlavaForConditionalGeneration.from_pretrained(
        folder, dtype=torch.float32, local_files_only=True
    )
    model.set_attn_implementation("eager")
    return make_policy(model.eval(), processor.tokenizer), processor.tokenizer


def _metrics(
    policy: VisionPolicy, tokenizer: Any, split: Split, params: Mapping[str, Any]
) -> Grounding:
    return evaluate(
        policy,
        tokenizer,
        split,
        answer_ids(tokenizer, split.answers),
        int(params["eval"]["batch_size"]),
        int(params["rl"]["last_layers"]),
    )


def _subset(split: Split, count: int) -> Split:
    """The first `count` items of `split` (the curve items)."""
    return Split(split.pixels[:count], split.answers[:count], split.conclusions[:count])


def warm_start(
    params: Mapping[str, Any],
    stream_dir: str | Path,
    out_dir: str | Path,
    out_metrics: str | Path,
    threads: int,
) -> dict[str, Any]:
    """Train, gate and save the SFT checkpoint in `out_dir` (module docstring); write its
    record (steps, gate and test metrics, the warm start's curve) to `out_metrics`."""
    spec, sft = params["model"], params["sft"]
    seed = derive_seed(int(sft["seed"]), STUDY, "sft")
    seed_everything(seed, threads)
    stream = load_stream(stream_dir)
    data = load_visarith(stream)
    tokenizer = build_tokenizer(stream_vocabulary(stream))
    policy, processor = build_policy(spec, tokenizer, int(data.sft.pixels.shape[-1]), seed)
    model = policy.model
    rng = np.random.default_rng(seed)
    demonstrations = corrupted(data.sft.answers, float(sft["corruption"]), rng)
    answers = answer_ids(tokenizer, demonstrations)
    optimizer = torch.optim.Adam(model.parameters(), lr=float(sft["lr"]))
    curve: list[dict[str, float]] = []
    for step in progress(range(1, int(sft["steps"]) + 1), "sft"):
        batch = torch.from_numpy(rng.choice(len(data.sft), int(sft["batch_size"]), replace=False))
        loss = supervised_step(policy, optimizer, data.sft.pixels[batch], answers[batch])
        if step % int(sft["eval_every"]) == 0 or step == int(sft["steps"]):
            gate = _metrics(policy, tokenizer, data.gate, params)
            curve.append({"step": step, "loss": loss, **gate.as_dict()})
            log.info("sft step %d: loss %.4f, gate accuracy %.3f", step, loss, gate.accuracy)
    check_gates(sft["gate"], gate)
    sampled = sampled_accuracy(
        policy,
        tokenizer,
        data.gate,
        int(params["eval"]["batch_size"]),
        float(params["rl"]["temperature"]),
        torch.Generator().manual_seed(derive_seed(seed, STUDY, "sampled")),
    )
    save_tiny_vlm(model, processor, out_dir)
    record = {
        "steps": int(sft["steps"]),
        "corrupted_digits": changed_share(data.sft.answers, demonstrations),
        "gate": {**gate.as_dict(), "sampled_accuracy": sampled},
        "test": _metrics(policy, tokenizer, data.test, params).as_dict(),
        "curve": curve,
    }
    write_json(out_metrics, record)
    return record


def corrupted(answers: Sequence[str], rate: float, rng: np.random.Generator) -> list[str]:
    """Demonstrations whose reading is wrong at `rate`: each of an answer's digits is replaced,
    with probability `rate`, by a digit drawn from the digits' frequencies over all `answers`
    (what a reader guessing from the text alone would write), and the chain is recomputed from
    the digits read, so the working stays consistent with the (mis)reading."""
    digits = np.array([parse_chain(answer).digits for answer in answers])
    frequencies = np.bincount(digits.ravel(), minlength=10) / digits.size
    replace = rng.random(digits.shape) < rate
    guesses = rng.choice(10, size=digits.shape, p=frequencies)
    read = np.where(replace, guesses, digits)
    return [chain_answer(row.tolist()) for row in read]


def changed_share(answers: Sequence[str], demonstrations: Sequence[str]) -> float:
    """The share of digits `demonstrations` read differently from `answers`."""
    pairs = zip(answers, demonstrations, strict=True)
    changed = [np.not_equal(parse_chain(a).digits, parse_chain(d).digits) for a, d in pairs]
    return float(np.mean(changed))


def check_gates(gate: Mapping[str, Any], measured: Grounding) -> None:
    """The card's gates on the warm start (gate items): greedy accuracy inside
    `gate.accuracy`, functional dependence at least `gate.min_dependence`; GateError naming
    every miss."""
    low, high = (float(v) for v in gate["accuracy"])
    problems = []
    if not low <= measured.accuracy <= high:
        problems.append(
            f"gate accuracy {measured.accuracy:.3f} outside sft.gate.accuracy {[low, high]}"
        )
    if measured.dependence < float(gate["min_dependence"]):
        problems.append(
            f"image dependence {measured.dependence:.3f} below sft.gate.min_dependence "
            f"{gate['min_dependence']}"
        )
    if problems:
        raise GateError("the warm start: " + "; ".join(problems))


def rl_settings(params: Mapping[str, Any]) -> RLSettings:
    """The RL constants of `rl` and `credit`."""
    rl, credit = params["rl"], params["credit"]
    config = CreditConfig(
        alpha=float(credit["alpha"]),
        beta=float(credit["beta"]),
        token_clip=tuple(credit["token_clip"]),
        trajectory_clip=tuple(credit["trajectory_clip"]),
        pos_only=bool(credit["pos_only"]),
        clip_eps=float(credit["clip_eps"]),
    )
    return RLSettings(
        int(rl["group_size"]), float(rl["temperature"]), int(rl["last_layers"]), config
    )


def update_checks(
    policy: VisionPolicy, row: Row, settings: RLSettings, rollouts: Rollouts, seed: int
) -> dict[str, Any]:
    """On one batch of rollouts: the operations of `row`'s update (loss and gradients) and of
    its base algorithm's (`cost.count_operations`; their ratio is HiCCR's overhead measure),
    and whether `row` with zero weight strengths gives exactly the base's loss and gradients."""
    parameters = [p for p in policy.model.parameters() if p.requires_grad]
    base = ROWS[row.base]

    def gradients(which: Row, config: CreditConfig) -> tuple[torch.Tensor, ...]:
        noise = torch.Generator().manual_seed(derive_seed(seed, STUDY, "check"))
        flat = RLSettings(settings.group_size, settings.temperature, settings.last_layers, config)
        loss = update_loss(policy, which, flat, rollouts, noise)
        grads = torch.autograd.grad(loss, parameters, allow_unused=True)  # e.g. CLIP's CLS path
        return (loss.detach(), *(g for g in grads if g is not None))

    operations, _ = count_operations(lambda: gradients(row, settings.credit))
    base_operations, _ = count_operations(lambda: gradients(base, settings.credit))
    zero = dataclasses.replace(settings.credit, alpha=0.0, beta=0.0)
    reduced, reference = gradients(row, zero), gradients(base, zero)
    return {
        "operations": operations,
        "base_operations": base_operations,
        "operations_ratio": operations / base_operations,
        "reduces_to_base": all(torch.equal(a, b) for a, b in zip(reduced, reference, strict=True)),
    }


def rl_run(
    params: Mapping[str, Any],
    method: str,
    seed: int,
    lr: float,
    checkpoint: str | Path,
    data: VisArithData,
    curve_split: Split | None,
    threads: int,
) -> tuple[VisionPolicy, Any, list[dict[str, float]], list[float]]:
    """`rl.steps` steps of row `method` from `checkpoint` (module docstring). Returns the
    trained policy, its tokenizer, the curve (metrics of `curve_split` every `rl.eval_every`
    steps, step 0 included; empty without a split) and the mean reward of every step."""
    seed_everything(derive_seed(seed, STUDY, "rl"), threads)
    policy, tokenizer = load_checkpoint(checkpoint)
    rl = params["rl"]
    settings = rl_settings(params)
    optimizer = torch.optim.Adam(policy.model.parameters(), lr=lr)
    prompts = np.random.default_rng(derive_seed(seed, STUDY, "prompts"))
    sampling = torch.Generator().manual_seed(derive_seed(seed, STUDY, "sampling"))
    noise = torch.Generator().manual_seed(derive_seed(seed, STUDY, "noise"))
    curve = []

    def record_curve(step: int) -> None:
        if curve_split is not None:
            metrics = _metrics(policy, tokenizer, curve_split, params)
            curve.append({"step": step, **metrics.as_dict()})

    record_curve(0)
    rewards = []
    for step in progress(range(1, int(rl["steps"]) + 1), f"{method} seed {seed}"):
        batch = torch.from_numpy(prompts.choice(len(data.rl), int(rl["prompts"]), replace=False))
        references = [data.rl.conclusions[i] for i in batch.tolist()]
        stats = rl_step(
            policy,
            tokenizer,
            optimizer,
            ROWS[method],
            settings,
            data.rl.pixels[batch],
            references,
            sampling,
            noise,
        )
        rewards.append(stats.reward)
        if step % int(rl["eval_every"]) == 0:
            record_curve(step)
    return policy, tokenizer, curve, rewards


def _curve_arrays(curve: Sequence[Mapping[str, float]], rewards: Sequence[float]) -> dict:
    columns = {name: np.array([point[name] for point in curve]) for name in curve[0]}
    return {**columns, "reward": np.array(rewards, dtype=np.float64)}


def tune_base(
    params: Mapping[str, Any],
    base: str,
    seeds: Sequence[int],
    stream_dir: str | Path,
    checkpoint: str | Path,
    out_path: str | Path,
    threads: int,
) -> dict[str, Any]:
    """Tune base row `base`'s learning rate over `tune.grid.<base>` on `seeds` (gate items)."""
    data = load_visarith(load_stream(stream_dir))

    def score(values: dict[str, Any], seed: int) -> float:
        policy, tokenizer, _, _ = rl_run(
            params, base, seed, float(values["lr"]), checkpoint, data, None, threads
        )
        return _metrics(policy, tokenizer, data.gate, params).accuracy

    record = tune(base, params["tune"]["grid"][base], score, seeds, TUNE_METRIC, "max")
    write_tuning(out_path, record)
    return record


def run_seed(
    params: Mapping[str, Any],
    method: str,
    seed: int,
    stream_dir: str | Path,
    checkpoint: str | Path,
    sft_record: str | Path,
    tuning_paths: Sequence[str | Path],
    out_metrics: str | Path,
    out_curves: str | Path,
    threads: int,
) -> dict[str, Any]:
    """One row and seed: RL at its base algorithm's tuned rate (its record among
    `tuning_paths`), then the test metrics. The warm
    start's record (`sft_record`, less its curve) is copied into the metrics: the table's
    "before RL" row, which the summary reads beside the runs."""
    base = ROWS[method].base
    tuned = selected(tuning_paths)
    if base not in tuned:
        raise ValueError(f"no tuning record of {method}'s base {base} among {list(tuning_paths)}")
    lr = float(tuned[base]["lr"])
    data = load_visarith(load_stream(stream_dir))
    seed_everything(derive_seed(seed, STUDY, "check"), threads)
    policy, tokenizer = load_checkpoint(checkpoint)
    settings = rl_settings(params)
    rollouts = first_rollouts(
        policy, tokenizer, settings, data.rl, int(params["rl"]["prompts"]), seed
    )
    checks = update_checks(policy, ROWS[method], settings, rollouts, seed)
    curve_split = _subset(data.test, int(params["rl"]["curve_items"]))
    policy, tokenizer, curve, rewards = rl_run(
        params, method, seed, lr, checkpoint, data, curve_split, threads
    )
    test = _metrics(policy, tokenizer, data.test, params)
    write_h5(out_curves, _curve_arrays(curve, rewards))
    metrics = {
        "method": method,
        "seed": seed,
        "lr": lr,
        "test": test.as_dict(),
        "mean_reward": float(np.mean(rewards)),
        "first_batch": {"reward": float(rollouts.rewards.mean()), **checks},
        "warm_start": {k: v for k, v in read_json(sft_record).items() if k != "curve"},
    }
    write_json(out_metrics, metrics)
    return metrics
