"""The paper scale's pretrained readers: a local language model folder reading one released
classification set (`readers.<name>: {kind: pretrained, folder, set}`, `sets.<set>`), measured
by the same selectors, channels and measures as the trained readers.

What a reader reads: the set's training file, split by `split_demonstrations` into the
demonstrations and the tuning queries (its last `text.tuning_share`), and its test file, the
evaluation queries. A seed draws, each from its own generator: the calibration prompts (η̂ is
fitted on prompts of demonstrations only, one to max(ks) items, a demonstration as the query:
no query of the seed and no test label), the seed's queries (from the tuning queries on a
tuning seed, from the test file otherwise) with their pools of demonstrations (`text_trials`),
and the random selector's permutations. The retriever (LSA, `text_trials.Retriever`) is fitted on
the demonstrations once per job.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from reprolab.core.determinism import resolve_device
from reprolab.studies.overcorrection.eta import prompt_sample
from reprolab.studies.overcorrection.evaluation import (
    Calibration,
    Queries,
    fit_calibration,
    prepare,
)
from reprolab.studies.overcorrection.llm_reader import LanguageModelReader, PromptFormat
from reprolab.studies.overcorrection.text_reader import TextReader
from reprolab.studies.overcorrection.text_sets import read_text_set
from reprolab.studies.overcorrection.text_trials import (
    Retriever,
    TextTable,
    build_table,
    draw_queries,
    split_demonstrations,
    text_trials,
)

log = logging.getLogger(__name__)
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class TextSource:
    """A pretrained reader's texts: the table, every text's retriever embedding, and the ids of
    the tuning queries and of the test queries."""

    table: TextTable
    embeddings: np.ndarray
    tuning_ids: tuple[int, ...]
    test_ids: tuple[int, ...]


def read_source(params: Mapping[str, Any], set_name: str) -> TextSource:
    """The set's files read, split and embedded (module docstring); the lines a reader skipped
    are logged with their file, line and reason (the job log keeps them)."""
    spec, text = params["sets"][set_name], params["text"]
    train = read_text_set(spec["format"], spec["train"])
    test = read_text_set(spec["format"], spec["test"])
    for part, path in ((train, spec["train"]), (test, spec["test"])):
        if part.skipped:
            log.warning(
                "%s: %d lines skipped: %s", path, len(part.skipped), "; ".join(part.skipped)
            )
    demonstrations, tuning = split_demonstrations(train.examples, text["tuning_share"])
    table = build_table(demonstrations, [*tuning, *test.examples], train.label_words)
    retriever = Retriever.fit(table.texts[: table.demonstrations], text["embedding"])
    first_test = table.demonstrations + len(tuning)
    return TextSource(
        table=table,
        embeddings=retriever.embed(table.texts),
        tuning_ids=tuple(range(table.demonstrations, first_test)),
        test_ids=tuple(range(first_test, len(table.texts))),
    )


def load_text_reader(params: Mapping[str, Any], name: str) -> tuple[TextReader, TextSource]:
    """Pretrained reader `name`: its model folder loaded offline on `text.device` in
    `text.dtype`, over its set's texts."""
    spec, text = params["readers"][name], params["text"]
    set_spec = params["sets"][spec["set"]]
    source = read_source(params, spec["set"])
    model = LanguageModelReader.from_folder(
        spec["folder"],
        source.table.label_words,
        PromptFormat(set_spec["input"], set_spec["answer"]),
        device=str(resolve_device(text["device"])),
        dtype=DTYPES[text["dtype"]],
    )
    return TextReader(model, source.table), source


def calibration_prompts(
    rng: np.random.Generator, table: TextTable, sizes: range, per_size: int
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per context size n in `sizes`, `per_size` prompts of n demonstrations and a further
    demonstration as the query (n + 1 distinct ids per prompt): (x (P, n, 1), y (P, n, p),
    x_query (P, 1))."""
    for n in sizes:
        ids = np.stack(
            [rng.choice(table.demonstrations, size=n + 1, replace=False) for _ in range(per_size)]
        )
        items = ids[:, :n]
        yield (
            items[..., None].astype(np.float64),
            table.onehot(items.ravel()).reshape(per_size, n, -1),
            ids[:, n:].astype(np.float64),
        )


def text_seed_queries(
    params: Mapping[str, Any],
    reader: TextReader,
    source: TextSource,
    rng_for: Callable[..., np.random.Generator],
    count: int,
    tuning: bool,
) -> tuple[Calibration, Queries, np.ndarray]:
    """A pretrained reader's calibration on the seed, the seed's queries prepared for it (`count`
    tuning queries on a tuning seed, test queries otherwise) and the random selector's
    permutations; `rng_for(part)` is the seed's generator of each draw."""
    pools = params["pools"]
    sizes = range(1, max(params["ks"]) + 1)
    prompts = calibration_prompts(
        rng_for("calibration"), source.table, sizes, params["calibration"]["prompts"]
    )
    calibration = fit_calibration(*prompt_sample(reader, prompts))
    candidates = source.tuning_ids if tuning else source.test_ids
    queries_rng = rng_for("queries")
    trials = text_trials(
        queries_rng,
        source.table,
        source.embeddings,
        draw_queries(queries_rng, candidates, count),
        pools["size"],
        pools["duplicates"],
    )
    permutations_rng = rng_for("random selector")
    permutations = np.stack([permutations_rng.permutation(pools["size"]) for _ in trials])
    return calibration, prepare(reader, trials), permutations
