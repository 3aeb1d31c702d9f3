"""hiccr's jobs: the supervised warm start with its gates, the RL runs, and the base algorithms'
tuning.

* `warm_start` (one job): at paper scale (`checkpoint`) the released instruction-tuned LLaVA
  is the warm start as it is (its gates are still checked and recorded); otherwise a tiny LLaVA
  built from params (a word-level tokenizer of the stream's words) is trained for `sft.steps`
  steps on the `sft` demonstrations, whose reading is wrong at `sft.corruption` (`corrupted`:
  the card's warm start, a model that has learnt the format and the arithmetic but reads with a
  guesser's noise, which RL can then sharpen). Then
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

The items come from the VisArith stream, or at paper scale from the released benchmark files
(`benchmarks`: studies.hiccr.benchmark_data). The model runs on `runtime.device` in
`runtime.dtype` (float32 on the CPU at smoke scale); with `lora` (paper scale) RL trains only
LoRA adapters on the language model's attention (models.lora), the vision tower, projector and
every other weight frozen, instead of every weight. Generators live on the
model's device, so a GPU run is seeded like a CPU run (its bits differ from the CPU's).
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

from reprolab.core.determinism import derive_seed, resolve_device, seed_everything
from reprolab.core.io import read_json, write_h5, write_json
from reprolab.core.operations import count_operations
from reprolab.core.progress import progress
from reprolab.core.tuning import selected, tune, write_tuning
from reprolab.models.lora import LoRA, add_lora
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
from reprolab.studies.hiccr.benchmark_data import load_benchmarks
from reprolab.studies.hiccr.credit import CreditConfig
from reprolab.studies.hiccr.data import (
    Split,
    Splits,
    answer_ids,
    load_visarith,
    prompt_ids,
    question_groups,
)
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


def make_policy(
    model: LlavaForConditionalGeneration, tokenizer: Any, params: Mapping[str, Any]
) -> VisionPolicy:
    """The policy view of `model`: for VisArith prompts (fixed answer length), or with
    `benchmarks` a prompt per question from the params `prompt` template and responses of
    `benchmarks.max_new_tokens` tokens. Every special token but the end token is banned."""
    image_tokens = tokens_per_image(model.config)
    if "benchmarks" not in params:
        banned = tokenizer.convert_tokens_to_ids([PAD, BOS, UNK, IMAGE])
        length = answer_ids(tokenizer, ["see 0 0 0 0 , 0 + 0 = 0 , 0 + 0 = 0 , 0 + 0 = 0 , so 0"])
        prompt = prompt_ids(tokenizer, image_tokens)
        return VisionPolicy(model, prompt, int(length.shape[1]), tokenizer.eos_token_id, banned)
    template = str(params["prompt"])

    def prompter(question: str) -> torch.Tensor:
        return prompt_ids(tokenizer, image_tokens, question, template)

    end = tokenizer.eos_token_id
    banned = [
        i for i in tokenizer.all_special_ids if i != end and i < model.config.text_config.vocab_size
    ]
    length = int(params["benchmarks"]["max_new_tokens"])
    return VisionPolicy(model, prompter("?"), length, end, banned, prompter)


def load_data(
    params: Mapping[str, Any], stream_dir: str | Path, processor: LlavaProcessor | None
) -> Splits:
    """The study's splits: from the released benchmark files (`benchmarks`, images prepared by
    the checkpoint's `processor`), else from the VisArith stream at `stream_dir` (no processor
    needed)."""
    if "benchmarks" in params:
        seed = int(params["sft"]["seed"])
        return load_benchmarks(params["benchmarks"], seed, processor.image_processor)
    return load_visarith(load_stream(stream_dir))


def generator(policy: VisionPolicy, seed: int, *names: str) -> torch.Generator:
    """A generator on the policy's device, seeded by `seed` and `names` (derive_seed)."""
    return torch.Generator(device=policy.device).manual_seed(derive_seed(seed, STUDY, *names))


def build_policy(
    spec: Mapping[str, Any], tokenizer: Any, image_size: int, seed: int
) -> tuple[VisionPolicy, LlavaProcessor]:
    """A seeded random tiny LLaVA of params `model` (eager attention) as a VisArith policy, and
    its processor."""
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
    return make_policy(model, tokenizer, {}), processor


def first_rollouts(
    policy: VisionPolicy, tokenizer: Any, settings: RLSettings, split: Split, count: int, seed: int
) -> tuple[VisionPolicy, Rollouts]:
    """Rollouts of the first `count` prompts of `split` that share its first question, sampled
    from a generator of `seed`: the batch the overhead and the zero-strength checks are measured
    on (returned with the policy's view for that question)."""
    first = question_groups(split.questions, range(len(split)))[0][:count]
    view = policy.for_question(split.questions[first[0]])
    sampling = generator(policy, seed, "check")
    return view, sample_rollouts(view, tokenizer, settings, split.subset(first), sampling)


def trainable_policy(
    checkpoint: str | Path, params: Mapping[str, Any], seed: int
) -> tuple[VisionPolicy, Any, LlavaProcessor]:
    """The policy RL trains from `checkpoint`, its tokenizer and processor: every weight, or
    with `lora` only the seeded LoRA adapters on the language model's attention (everything
    else frozen)."""
    policy, tokenizer, processor = load_checkpoint(checkpoint, params)
    if params.get("lora", {}).get("rank", 0):
        policy.model.requires_grad_(False)
        lora = LoRA(**params["lora"])
        add_lora(policy.model.model.language_model, lora, derive_seed(seed, STUDY, "lora"))
    return policy, tokenizer, processor


def load_checkpoint(
    folder: str | Path, params: Mapping[str, Any]
) -> tuple[VisionPolicy, Any, LlavaProcessor]:
    """The policy, tokenizer and processor of a saved checkpoint, from the folder only, on
    `runtime.device` in `runtime.dtype` (float32 on the CPU without `runtime`)."""
    runtime = params.get("runtime", {"device": "cpu", "dtype": "float32"})
    processor = LlavaProcessor.from_pretrained(folder, local_files_only=True)
    model = LlavaForConditionalGeneration.from_pretrained(
        folder, dtype=getattr(torch, runtime["dtype"]), local_files_only=True
    )
    model.set_attn_implementation("eager")
    model = model.to(resolve_device(runtime["device"])).eval()
    return make_policy(model, processor.tokenizer, params), processor.tokenizer, processor


def _metrics(
    policy: VisionPolicy, tokenizer: Any, split: Split, params: Mapping[str, Any]
) -> Grounding:
    return evaluate(
        policy,
        tokenizer,
        split,
        answer_ids(tokenizer, split.answers, pad=split.reading is None),
        int(params["eval"]["batch_size"]),
        int(params["rl"]["last_layers"]),
    )


def warm_start(
    params: Mapping[str, Any],
    stream_dir: str | Path,
    out_dir: str | Path,
    out_metrics: str | Path,
    threads: int,
) -> dict[str, Any]:
    """Train, gate and save the SFT checkpoint in `out_dir` (module docstring); write its
    record (steps, gate and test metrics, the warm start's curve) to `out_metrics`."""
    if "checkpoint" in params:
        return released_warm_start(params, out_dir, out_metrics, threads)
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
    record = {
        "steps": int(sft["steps"]),
        "corrupted_digits": changed_share(data.sft.answers, demonstrations),
        **gate_and_save(policy, tokenizer, processor, data, gate, params, seed, out_dir),
        "curve": curve,
    }
    write_json(out_metrics, record)
    return record


def gate_and_save(
    policy: VisionPolicy,
    tokenizer: Any,
    processor: LlavaProcessor,
    data: Splits,
    gate: Grounding,
    params: Mapping[str, Any],
    seed: int,
    out_dir: str | Path,
) -> dict[str, Any]:
    """The end of either warm start: the card's gates on its gate metrics `gate` (GateError
    when missed, before anything is saved), the accuracy of answers sampled at the RL
    temperature on the gate items (the reward RL starts from), the checkpoint saved to
    `out_dir` with its processor, and the record's `gate` and `test` parts."""
    check_gates(params["sft"]["gate"], gate)
    sampled = sampled_accuracy(
        policy,
        tokenizer,
        data.gate,
        int(params["eval"]["batch_size"]),
        float(params["rl"]["temperature"]),
        generator(policy, seed, "sampled"),
    )
    save_tiny_vlm(policy.model, processor, out_dir)
    return {
        "gate": {**gate.as_dict(), "sampled_accuracy": sampled},
        "test": _metrics(policy, tokenizer, data.test, params).as_dict(),
    }


def released_warm_start(
    params: Mapping[str, Any], out_dir: str | Path, out_metrics: str | Path, threads: int
) -> dict[str, Any]:
    """The paper-scale warm start: the released checkpoint `checkpoint` as it is, its gates
    checked on the gate items, saved to `out_dir` with its processor, and its record written
    (no training steps, no demonstrations, so no corrupted digits)."""
    seed = derive_seed(int(params["sft"]["seed"]), STUDY, "sft")
    seed_everything(seed, threads)
    policy, tokenizer, processor = load_checkpoint(params["checkpoint"], params)
    data = load_data(params, "", processor)
    gate = _metrics(policy, tokenizer, data.gate, params)
    record = {
        "steps": 0,
        "corrupted_digits": None,
        **gate_and_save(policy, tokenizer, processor, data, gate, params, seed, out_dir),
        "curve": [{"step": 0, "loss": None, **gate.as_dict()}],
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
    its base algorithm's (`core.operations.count_operations`; their ratio is HiCCR's overhead
    measure), and whether `row` with zero weight strengths gives exactly the base's loss and
    gradients."""
    parameters = [p for p in policy.model.parameters() if p.requires_grad]
    base = ROWS[row.base]

    def gradients(which: Row, config: CreditConfig) -> tuple[torch.Tensor, ...]:
        noise = generator(policy, seed, "check")
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
    data: Splits,
    curve_split: Split | None,
    threads: int,
    loaded: tuple[VisionPolicy, Any] | None = None,
) -> tuple[VisionPolicy, Any, list[dict[str, float]], list[float]]:
    """`rl.steps` steps of row `method` from `checkpoint` (module docstring). Returns the
    trained policy, its tokenizer, the curve (metrics of `curve_split` every `rl.eval_every`
    steps, step 0 included; empty without a split) and the mean reward of every step.

    `loaded` is `trainable_policy(checkpoint, params, seed)`'s policy and tokenizer when the
    caller holds them, untrained: they are used instead of loading the checkpoint again (at
    paper scale a second 7B load, and two models in memory). Loading draws no random numbers
    (checked), so either way the run is the same."""
    seed_everything(derive_seed(seed, STUDY, "rl"), threads)
    if loaded is None:
        policy, tokenizer, _ = trainable_policy(checkpoint, params, seed)
    else:
        policy, tokenizer = loaded
        policy.model.eval()  # as loaded; the caller's checks may have left it in train mode
    rl = params["rl"]
    settings = rl_settings(params)
    trained = [p for p in policy.model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(trained, lr=lr)
    prompts = np.random.default_rng(derive_seed(seed, STUDY, "prompts"))
    sampling = generator(policy, seed, "sampling")
    noise = generator(policy, seed, "noise")
    curve = []

    def record_curve(step: int) -> None:
        if curve_split is not None:
            metrics = _metrics(policy, tokenizer, curve_split, params)
            curve.append({"step": step, **metrics.as_dict()})

    record_curve(0)
    rewards = []
    for step in progress(range(1, int(rl["steps"]) + 1), f"{method} seed {seed}"):
        batch = prompts.choice(len(data.rl), int(rl["prompts"]), replace=False)
        step_prompts = data.rl.subset(batch.tolist())
        stats = rl_step(
            policy, tokenizer, optimizer, ROWS[method], settings, step_prompts, sampling, noise
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
    released = "benchmarks" in params  # only released images need the checkpoint's processor
    processor = (
        LlavaProcessor.from_pretrained(checkpoint, local_files_only=True) if released else None
    )
    data = load_data(params, stream_dir, processor)

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
    """One row and seed: the first-batch checks, RL at its base algorithm's tuned rate (its
    record among `tuning_paths`) from the same loaded checkpoint, then the test metrics. The
    warm start's record (`sft_record`, less its curve) is copied into the metrics: the table's
    "before RL" row, which the summary reads beside the runs."""
    base = ROWS[method].base
    tuned = selected(tuning_paths)
    if base not in tuned:
        raise ValueError(f"no tuning record of {method}'s base {base} among {list(tuning_paths)}")
    lr = float(tuned[base]["lr"])
    seed_everything(derive_seed(seed, STUDY, "check"), threads)
    policy, tokenizer, processor = trainable_policy(checkpoint, params, seed)
    data = load_data(params, stream_dir, processor)
    settings = rl_settings(params)
    view, rollouts = first_rollouts(
        policy, tokenizer, settings, data.rl, int(params["rl"]["prompts"]), seed
    )
    checks = update_checks(view, ROWS[method], settings, rollouts, seed)
    curve_split = data.test.subset(range(min(len(data.test), int(params["rl"]["curve_items"]))))
    policy, tokenizer, curve, rewards = rl_run(
        params, method, seed, lr, checkpoint, data, curve_split, threads, (policy, tokenizer)
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
