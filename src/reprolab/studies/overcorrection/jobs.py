"""The overcorrection jobs behind the rules: train one reader on one seed's prior
(`overcorrection_train`), choose MMR's λ and the theory rule per reader and channel on the
tuning seeds (`overcorrection_tune`), and measure every reader, channel, selector and k on one
evaluation seed (`overcorrection_run`).

What a seed fixes (each from its own derived generator, so adding a reader or a selector
changes no other draw): the prior W₀, each reader's initial weights and training prompts, the
calibration prompts, the shifted world W* and its test queries with their pools, and the random
selector's permutations. A pretrained reader (paper scale) is not trained; its seed draws its
set's queries and pools instead of a world (text_path).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.torch import load_file, save_file

from reprolab.core.determinism import derive_seed, seed_everything
from reprolab.core.io import atomic_path, read_json, write_json
from reprolab.core.tuning import tune, write_tuning
from reprolab.studies.overcorrection.correction import r_squared
from reprolab.studies.overcorrection.evaluation import (
    Calibration,
    Queries,
    answer,
    calibrate,
    measures,
    overshoots,
    prepare,
    select,
    selection_key,
)
from reprolab.studies.overcorrection.icl_data import draw_prior, shifted_trials, shifted_world
from reprolab.studies.overcorrection.readers import (
    LinearAttentionReader,
    PromptReader,
    Reader,
    SoftmaxReader,
    train_reader,
)
from reprolab.studies.overcorrection.text_path import (
    TextSource,
    load_text_reader,
    text_seed_queries,
)
from reprolab.studies.overcorrection.workflow_io import (
    TUNED_SELECTORS,
    pretrained_readers,
    tuning_method,
)

STUDY = "overcorrection"
DOMAINS = {"mmr": {"lam": (0.0, 1.0)}}
"""The tuned axes' domains: MMR's λ ends at 1 (top-k), so a winner there is no grid edge."""
LOSS_POINTS = 50
"""Points of a reader's training-loss curve (each the mean loss of its window of steps)."""
SCATTER_QUERIES = 100
"""Queries whose predicted and measured overshoots the run file keeps for the report."""


def rng_for(seed: int, *parts: object) -> np.random.Generator:
    """The generator of one of a seed's draws (module docstring)."""
    return np.random.default_rng(derive_seed(seed, STUDY, *parts))


def seed_prior(params: Mapping[str, Any], seed: int) -> np.ndarray:
    """The seed's prior W₀."""
    task = params["task"]
    return draw_prior(rng_for(seed, "prior"), task["dim"], task["outputs"])


def build_reader(params: Mapping[str, Any], name: str) -> Reader:
    """An untrained reader of the params (`readers.<name>`; initial weights from torch's global
    generator)."""
    spec, task = params["readers"][name], params["task"]
    if spec["kind"] == "linear":
        return LinearAttentionReader(task["dim"], task["outputs"])
    architecture = {key: spec[key] for key in ("layers", "hidden", "heads")}
    return SoftmaxReader(task["dim"], task["outputs"], context=task["n_max"] + 2, **architecture)


def reader_paths(folder: str | Path, name: str, seed: int) -> tuple[Path, Path]:
    """The weights and training record of reader `name` on `seed` under `folder`."""
    base = Path(folder) / name / f"seed{seed}"
    return base.with_suffix(".safetensors"), base.with_suffix(".json")


def train_job(
    params: Mapping[str, Any],
    name: str,
    seed: int,
    weights_path: str | Path,
    record_path: str | Path,
    threads: int,
) -> dict[str, Any]:
    """Train reader `name` on the seed's prior; write its weights and a record (loss curve,
    and how well its answer without items matches the prior: ŷ(∅) against W₀ x_q on fresh
    queries)."""
    seed_everything(derive_seed(seed, STUDY, name, "init"), threads)
    spec, task = params["readers"][name], params["task"]
    prior = seed_prior(params, seed)
    reader = build_reader(params, name)
    log_every = max(1, spec["steps"] // LOSS_POINTS)
    losses = train_reader(
        reader,
        prior,
        steps=spec["steps"],
        n_max=task["n_max"],
        sigma=task["sigma"],
        noise=task["noise"],
        batch=spec["batch"],
        lr=spec["lr"],
        seed=derive_seed(seed, STUDY, name, "prompts"),
        log_every=log_every,
    )
    x_query = rng_for(seed, name, "prior check").standard_normal((1000, task["dim"]))
    x_query /= np.sqrt(task["dim"])
    empty = np.zeros((1000, 0, task["dim"])), np.zeros((1000, 0, task["outputs"]))
    record = {
        "reader": name,
        "seed": seed,
        "steps": spec["steps"],
        "log_every": log_every,
        "loss": losses,
        "final_loss": losses[-1],
        "prior_r2": r_squared(reader.predict(*empty, x_query), x_query @ prior.T),
    }
    with atomic_path(weights_path) as tmp:
        save_file(reader.state_dict(), str(tmp))
    write_json(record_path, record)
    return record


def load_reader(params: Mapping[str, Any], name: str, weights_path: str | Path) -> Reader:
    """A trained reader from its weights file."""
    reader = build_reader(params, name)
    reader.load_state_dict(load_file(str(weights_path)))
    return reader.eval()


def seed_queries(
    params: Mapping[str, Any],
    reader: PromptReader,
    seed: int,
    count: int,
    source: TextSource | None = None,
    tuning: bool = False,
) -> tuple[Calibration, Queries, np.ndarray]:
    """A reader's calibration on the seed, the seed's test queries prepared for it, and the
    random selector's permutations. A pretrained reader (its `source` given) reads its set's
    queries, the tuning queries when `tuning` (text_path); a trained one the seed's own world."""
    if source is not None:
        return text_seed_queries(
            params, reader, source, lambda *parts: rng_for(seed, *parts), count, tuning
        )
    task, pools = params["task"], params["pools"]
    prior = seed_prior(params, seed)
    calibration = calibrate(
        reader, prior, task, params["calibration"], rng_for(seed, "calibration")
    )
    truth = shifted_world(rng_for(seed, "world"), prior, task["shift"])
    trials = shifted_trials(
        rng_for(seed, "queries"),
        truth,
        count,
        pools["size"],
        pools["duplicates"],
        pools["duplicate_noise"],
    )
    permutations_rng = rng_for(seed, "random selector")
    permutations = np.stack([permutations_rng.permutation(pools["size"]) for _ in trials])
    return calibration, prepare(reader, trials), permutations


def tuned_values(tuned: Mapping[str, Mapping[str, Any]], reader: str, channel: str) -> dict:
    """MMR's λ and the theory rule chosen for this reader and channel."""
    values: dict[str, Any] = {}
    for selector in TUNED_SELECTORS:
        values.update(tuned[tuning_method(reader, channel, selector)])
    return values


def mean_error(
    params: Mapping[str, Any],
    selector: str,
    channel: str,
    reader: PromptReader,
    prepared: tuple[Calibration, Queries, np.ndarray],
    values: Mapping[str, Any],
) -> float:
    """MSE of one selector in one channel, averaged over the ks (what tuning minimises)."""
    calibration, queries, permutations = prepared
    ks = params["ks"]
    orders = select(selector, channel, reader, queries, calibration, max(ks), values, permutations)
    errors = []
    for k in ks:
        answers, predicted = answer(channel, reader, queries, calibration, orders[:, :k])
        errors.append(measures(answers, predicted, queries, params["thresholds"])[0]["mse"])
    return float(np.mean(errors))


def tune_job(
    params: Mapping[str, Any],
    name: str,
    seeds: Sequence[int],
    weights: Mapping[int, str | Path],
    out_dir: str | Path,
    threads: int,
) -> list[dict[str, Any]]:
    """For reader `name` and each channel, choose MMR's λ and the theory rule by their MSE
    averaged over the ks on the tuning seeds' queries (`tune.queries` per seed; the tuning
    seeds' worlds, or a set's tuning queries, are never evaluated); one tuning record per
    (channel, selector). `weights` holds a trained reader's file per tuning seed; a pretrained
    reader is loaded once."""
    seed_everything(derive_seed(min(seeds), STUDY, name, "tune"), threads)
    count = params["tune"]["queries"]
    if name in pretrained_readers(params):
        reader, source = load_text_reader(params, name)
        readers = {seed: reader for seed in seeds}
        prepared = {seed: seed_queries(params, reader, seed, count, source, True) for seed in seeds}
    else:
        readers = {seed: load_reader(params, name, weights[seed]) for seed in seeds}
        prepared = {seed: seed_queries(params, readers[seed], seed, count) for seed in seeds}
    records = []
    for channel in params["channels"]:
        for selector in TUNED_SELECTORS:

            def evaluate(values: dict[str, Any], seed: int, channel=channel, selector=selector):
                return mean_error(params, selector, channel, readers[seed], prepared[seed], values)

            method = tuning_method(name, channel, selector)
            record = tune(
                method,
                params["tune"]["grid"][selector],
                evaluate,
                sorted(seeds),
                "MSE averaged over k",
                "min",
                limits=DOMAINS.get(selector),
            )
            write_tuning(Path(out_dir) / f"{method}.json", record)
            records.append(record)
    return records


def evaluate_reader(
    params: Mapping[str, Any],
    name: str,
    reader: PromptReader,
    prepared: tuple[Calibration, Queries, np.ndarray],
    tuned: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    """One reader's run-file entry from its calibration, queries and permutations on the seed
    (`seed_queries`): the calibration and, per channel, every selector's measures at every k,
    the R² pooled over selectors (but `none`) and ks, the theory rule applied, and the
    overshoots of top-k and theory at the largest k for the report's scatter."""
    calibration, queries, permutations = prepared
    ks, largest = params["ks"], max(params["ks"])
    out: dict[str, Any] = {
        "calibration": {
            "etas": calibration.etas.tolist(),
            "eta": calibration.eta,
            "r2": calibration.r2,
        },
        "channels": {},
    }
    chosen: dict[tuple, np.ndarray] = {}
    answered: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
    for channel in params["channels"]:
        values = tuned_values(tuned, name, channel)
        cells: dict[str, dict[str, dict[str, float]]] = {}
        pooled_predicted, pooled_measured, scatter = [], [], {}
        for selector in params["selectors"]:
            key = selection_key(selector, channel, values)
            if key not in chosen:
                chosen[key] = select(
                    selector, channel, reader, queries, calibration, largest, values, permutations
                )
            orders = chosen[key]
            cells[selector] = {}
            for k in ks:
                delivery = (key, k, channel == "memory")
                if delivery not in answered:
                    answered[delivery] = answer(
                        channel, reader, queries, calibration, orders[:, :k]
                    )
                answers, predicted = answered[delivery]
                cell, kappas = measures(answers, predicted, queries, params["thresholds"])
                cells[selector][str(k)] = cell
                if selector != "none":
                    pooled_predicted.append(predicted)
                    pooled_measured.append(answers - queries.baseline)
                if k == largest and selector in ("top_k", "theory"):
                    scatter[selector] = {
                        "measured": kappas[:SCATTER_QUERIES].tolist(),
                        "predicted": overshoots(predicted, queries.errors)[
                            :SCATTER_QUERIES
                        ].tolist(),
                    }
        out["channels"][channel] = {
            "theory_rule": values["rule"],
            "mmr_lambda": values["lam"],
            "r2_pooled": r_squared(
                np.concatenate(pooled_predicted), np.concatenate(pooled_measured)
            ),
            "selectors": cells,
            "scatter": scatter,
        }
    return out


def run_job(
    params: Mapping[str, Any],
    seed: int,
    weights: Mapping[str, str | Path],
    records: Mapping[str, str | Path],
    tuned: Mapping[str, Mapping[str, Any]],
    out_path: str | Path,
    threads: int,
) -> dict[str, Any]:
    """Every reader of the params on one evaluation seed; writes and returns metrics.json.
    `weights` and `records` name the trained readers' files (a pretrained reader's folder and
    set come from the params)."""
    seed_everything(derive_seed(seed, STUDY, "run"), threads)
    out: dict[str, Any] = {"seed": seed, "ks": list(params["ks"]), "readers": {}}
    count = params["pools"]["queries"]
    for name in params["readers"]:
        if name in pretrained_readers(params):
            reader, source = load_text_reader(params, name)
            prepared = seed_queries(params, reader, seed, params["text"]["queries"], source)
            out["readers"][name] = evaluate_reader(params, name, reader, prepared, tuned)
            continue
        reader = load_reader(params, name, weights[name])
        entry = evaluate_reader(
            params, name, reader, seed_queries(params, reader, seed, count), tuned
        )
        record = read_json(records[name])
        entry["training"] = {"final_loss": record["final_loss"], "prior_r2": record["prior_r2"]}
        out["readers"][name] = entry
    write_json(out_path, out)
    return out
