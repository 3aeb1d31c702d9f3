"""What the study is, without torch: its name (the root of every seed it derives) and the
generator spec of each setting. The jobs (torch) and the summary (`results`, which must not
load torch) both read them from here.
"""

from __future__ import annotations

from typing import Any

STUDY = "icl_manifold"


def setting_spec(params: dict[str, Any], setting: str) -> dict[str, Any]:
    """The generator spec of one setting: the shared data values plus the setting's own."""
    if setting not in params["settings"]:
        raise ValueError(
            f"icl_manifold: unknown setting '{setting}'; params has {list(params['settings'])}"
        )
    return {**params["data"], **params["settings"][setting]}
