"""What ngpt_fp4's rule file needs when Snakemake parses it, without importing torch: the
architectures and recipes the study knows, and the check of its params."""

from __future__ import annotations

from typing import Any

ARCHITECTURES = ("gpt", "ngpt")
RECIPE_NAMES = ("fp32", "nvfp4", "nvfp4_rht_sr", "nvfp4_static")
"""The table's recipes (reprolab.studies.ngpt_fp4.nvfp4.recipe_named)."""


def check_architecture(arch: str) -> None:
    """ValueError naming `arch` unless it is one of ARCHITECTURES."""
    if arch not in ARCHITECTURES:
        raise ValueError(
            f"ngpt_fp4: unknown architecture {arch!r}; expected one of {ARCHITECTURES}"
        )


def check_params(params: dict[str, Any]) -> None:
    """ValueError naming the key when the study's params cannot run: an unknown architecture
    or recipe, no full-precision reference among the recipes, a hidden size of the sweep that
    NVFP4's blocks of 16 or the heads' width do not divide."""
    for arch in params["architectures"]:
        check_architecture(arch)
    for recipe in params["recipes"]:
        if recipe not in RECIPE_NAMES:
            raise ValueError(
                f"ngpt_fp4.recipes: unknown NVFP4 recipe {recipe!r}; expected one of "
                f"{list(RECIPE_NAMES)}"
            )
    if "fp32" not in params["recipes"]:
        raise ValueError("ngpt_fp4.recipes: needs 'fp32', the reference of every Δ")
    width = params["model"]["hidden"] // params["model"]["heads"]
    for hidden in params["mechanism"]["hiddens"]:
        if hidden % 16 or (hidden > width and hidden % width):
            raise ValueError(
                f"ngpt_fp4.mechanism.hiddens: {hidden} is not a multiple of 16 and of the head "
                f"width {width}"
            )
