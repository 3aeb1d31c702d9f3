"""What normlift's rule file and results need without importing torch: the rows, which of them
are tuned, and the check of the study's params."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reprolab.core.tuning import check_equal_grids

ABLATIONS = ("normlift_discount", "normlift_uniform", "normlift_average")
"""NormLift's ablation rows: they take NormLift's tuned values and have no grid."""
TUNED = ("distill", "wavg_knn", "normlift_raw", "normlift")
"""The rows with a tuning job each (the same number of grid points for every one)."""
ROWS = {
    "distill": "Distill (render-side L2)",
    "maxw": "MaxW",
    "wavg": "WAvg",
    "wavg_knn": "WAvg+kNN-avg",
    "normlift_raw": "NormLift-raw (votes by r)",
    "normlift": "NormLift",
    "normlift_discount": "NormLift, ρ' = r(1 − e^(−N_eff/2))",
    "normlift_uniform": "NormLift, uniform votes",
    "normlift_average": "NormLift, mode averaged",
}
"""Row key → the table's row name, in table order."""
RELIABILITY = ("W", "r", "rho", "rho_discount")
"""The reliability scores whose AUROC a run records: the support W (total weight), the
magnitude r, the calibrated ρ and the discount ablation ρ'."""
AVERAGING = ("maxw", "wavg", "wavg_knn")
"""The averaging-based (training-free) baselines: NormLift's claim is against the strongest."""
LIMITS = {"tau": (0.0, 1.0), "tau_c": (-1.0, 1.0)}
"""The domains of the bounded tuning axes: an end of a domain is no grid edge (core.tuning)."""
FIELDS = {"distill": {"steps", "lr"}, "wavg_knn": {"k"}}
FIELDS.update({m: {"k", "tau", "tau_c", "passes"} for m in ("normlift_raw", "normlift")})
"""The settings of each tuned row: its params section and its grid set them together."""


def check_params(params: Mapping[str, Any]) -> None:
    """ValueError naming the key when normlift's params cannot run: an ablation without
    NormLift, a tuned row without its grid or grids of unequal size, a setting both fixed and
    tuned or neither, a patch grid that does not divide the image."""
    methods = list(params["methods"])
    if any(m in ABLATIONS for m in methods) and "normlift" not in methods:
        raise ValueError(
            "normlift.methods: the ablation rows take NormLift's values; list normlift"
        )
    tuned = [m for m in methods if m in TUNED]
    grids = params["tune"]["grid"]
    check_equal_grids(grids, tuned, "normlift.tune.grid")
    for method in tuned:
        fixed, grid = set(params.get(method, {})), set(grids[method])
        both = sorted(fixed & grid)
        if both:
            raise ValueError(f"normlift.{method}: {both} also on tune.grid.{method}; tuned only")
        unset = sorted(FIELDS[method] - fixed - grid)
        if unset:
            raise ValueError(f"normlift.{method}: no value for {unset}: set it or tune it")
    data = params["data"]
    if data["source"] == "synthetic":
        size, patches = data["cameras"]["image_size"], data["features"]["patch_grid"]
        if size % patches:
            raise ValueError(
                f"normlift.data.features.patch_grid: {patches} does not divide the image size "
                f"{size} (data.cameras.image_size)"
            )


def scene_folder(
    params: Mapping[str, Any], seed: int, seeds: Sequence[int], tuning_seeds: Sequence[int]
) -> str:
    """The real scene folder of `seed` at paper scale: the i-th evaluation seed reads the i-th
    of `data.folder.scenes`, the i-th tuning seed the i-th of `data.folder.tuning_scenes`."""
    spec = params["data"]["folder"]
    for key, listed in (("scenes", seeds), ("tuning_scenes", tuning_seeds)):
        if seed in listed:
            index = list(listed).index(seed)
            folders = spec[key]
            if index >= len(folders):
                raise ValueError(
                    f"normlift.data.folder.{key}: {len(folders)} scene folders for seed {seed}, "
                    f"the {index + 1}-th of its seeds"
                )
            return folders[index]
    raise ValueError(f"normlift: seed {seed} is neither an evaluation nor a tuning seed")
