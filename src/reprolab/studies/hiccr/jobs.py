"""hiccr's jobs: the supervised warm start with its gates, the RL runs, and the base algorithms'
tuning.

* `warm_start` (one job): a tiny LLaVA built from params (a word-level tokenizer of the
  stream's words) is trained on the `sft` demonstrations until the gate items' accuracy reaches
  the window's lower bound, checked every `sft.eval_every` steps (the stopping rule, on the
  gate items, never on the test items). Then the card's gates must hold: accuracy inside
  `sft.gate.accuracy` and functional dependence at least `sft.gate.min_dependence`; otherwise
  the job fails naming what it measured, and no RL job starts. The checkpoint is saved with
  `save_pretrained` and is every run's and every seed's starting point, as a released SFT model
  is at paper scale; `sft/metrics.json` records the gates and the checkpoint's test metrics (the
  "before RL" row of every grounding comparison).
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

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import LlavaForConditionalGeneration, LlavaProcessor

from reprolab.core.determinism import derive_seed, seed_everything
from reprolab.core.io import write_h5, write_json
from reprolab.core.progress import progress
from reprolab.core.tuning import read_tuning, tune, write_tuning
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
from reprolab.studies.hiccr.credit import CreditConfig
from reprolab.studies.hiccr.data import Split, VisArithData, answer_ids, load_visarith, prompt_ids
from reprolab.studies.hiccr.evaluate import Grounding, evaluate
from reprolab.studies.hiccr.policy import VisionPolicy
from reprolab.studies.hiccr.rows import ROWS
from reprolab.studies.hiccr.train import RLSettings, rl_step, supervised_step
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
    model, processor = build_tiny_llava(
        tokenizer,
        seed=seed,
        image_size=int(data.sft.pixels.shape[-1]),
        patch_size=int(spec["patch_size"]),
        hidden=int(spec["hidden"]),
        layers=int(spec["layers"]),
        heads=int(spec["heads"]),
        pixel_mean_std=PIXEL_MEAN_STD,
    )
    model.set_attn_implementation("eager")
    policy = make_policy(model, tokenizer)
    answers = answer_ids(tokenizer, data.sft.answers)
    optimizer = torch.optim.Adam(model.parameters(), lr=float(sft["lr"]))
    rng = np.random.default_rng(seed)
    low, high = (float(v) for v in sft["gate"]["accuracy"])
    curve: list[dict[str, float]] = []
    gate = None
    for step in progress(range(1, int(sft["max_steps"]) + 1), "sft"):
        batch = torch.from_numpy(rng.choice(len(data.sft), int(sft["batch_size"]), replace=False))
        loss = supervised_step(policy, optimizer, data.sft.pixels[batch], answers[batch])
        if step % int(sft["eval_every"]) == 0:
            gate = _metrics(policy, tokenizer, data.gate, params)
            curve.append({"step": step, "loss": loss, **gate.as_dict()})
            log.info("sft step %d: loss %.4f, gate accuracy %.3f", step, loss, gate.accuracy)
            if gate.accuracy >= low:
                break
    if gate is None:
        raise GateError(f"sft.max_steps {sft['max_steps']} < sft.eval_every {sft['eval_every']}")
    problems = []
    if not low <= gate.accuracy <= high:
        problems.append(
            f"gate accuracy {gate.accuracy:.3f} outside sft.gate.accuracy {[low, high]}"
        )
    if gate.dependence < float(sft["gate"]["min_dependence"]):
        problems.append(
            f"image dependence {gate.dependence:.3f} below sft.gate.min_dependence "
            f"{sft['gate']['min_dependence']}"
        )
    if problems:
        raise GateError(f"the warm start after {curve[-1]['step']} steps: " + "; ".join(problems))
    save_tiny_vlm(model, processor, out_dir)
    record = {
        "steps": int(curve[-1]["step"]),
        "gate": gate.as_dict(),
        "test": _metrics(policy, tokenizer, data.test, params).as_dict(),
        "curve": curve,
    }
    write_json(out_metrics, record)
    return record


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
    credit = CreditConfig(
        alpha=float(params["credit"]["alpha"]),
        beta=float(params["credit"]["beta"]),
        token_clip=tuple(params["credit"]["token_clip"]),
        trajectory_clip=tuple(params["credit"]["trajectory_clip"]),
        pos_only=bool(params["credit"]["pos_only"]),
        clip_eps=float(params["credit"]["clip_eps"]),
    )
    settings = RLSettings(
        int(rl["group_size"]), float(rl["temperature"]), int(rl["last_layers"]), credit
    )
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
    tuning_path: str | Path,
    out_metrics: str | Path,
    out_curves: str | Path,
    threads: int,
) -> dict[str, Any]:
    """One row and seed: RL at its base algorithm's tuned rate, then the test metrics."""
    record = read_tuning(tuning_path)
    base = ROWS[method].base
    if record["method"] != base:
        raise ValueError(f"{tuning_path}: tunes {record['method']}, not {method}'s base {base}")
    lr = float(record["selected"]["lr"])
    data = load_visarith(load_stream(stream_dir))
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
    }
    write_json(out_metrics, metrics)
    return metrics
