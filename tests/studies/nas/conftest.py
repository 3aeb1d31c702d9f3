"""The tiny fact world and GPT-2 that nas's tests edit, trained once per test session, and the
methods and claims of a small nas params section."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reprolab.models.fact_lm import train_fact_lm
from reprolab.models.facts import WorldSpec, make_world

WORLD = make_world(
    WorldSpec(subjects=16, relations=2, objects=4, prefix_max=2, paraphrase_subjects=0.5, seed=0)
)
SPEC = {
    "layers": 4,
    "hidden": 48,
    "heads": 4,
    "context": 16,
    "lr": 0.003,
    "batch_size": 32,
    "arithmetic_share": 0.1,
}
METHODS: dict[str, dict[str, Any]] = {
    "memit": {"editor": "memit"},
    "memit_nas": {"editor": "memit", "anchor": "vstar"},
    "memit_tight": {"editor": "memit", "clamp": 1.0},
    "rome": {"editor": "rome"},
    "rome_nas": {"editor": "rome", "anchor": "vstar"},
}
CLAIMED = {
    "alpha": 0.05,
    "min_effect": 0.0,
    "plain": "memit",
    "nas": "memit_nas",
    "tight": "memit_tight",
    "rome": "rome",
    "rome_nas": "rome_nas",
}
"""The claims' test settings and the method each claim role names."""


@pytest.fixture(scope="session")
def fact_lm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """WORLD's fact LM (SPEC, 400 steps), saved; tests load their own copy to edit."""
    folder = tmp_path_factory.mktemp("nas-lm") / "model"
    record = train_fact_lm(WORLD, SPEC, 400, 0, folder, threads=1, show_progress=False)
    assert record["accuracy"]["trained"] == 1.0
    return folder
