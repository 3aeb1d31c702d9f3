"""What the proofrank rules need from the study: the params check and the backends that get a
training job.

workflow/rules/proofrank.smk imports this module, so it imports nothing heavy (no torch,
transformers or sympy): every snakemake start and every cluster job parses the rule files.

A backend (`proofrank.backends.<name>`) is one of:

* `{kind: retrieval, mode: best | random}`: the corpus's own proofs (backends.RetrievalBackend);
* `{kind: noncompliant, rate: ρ}`: random retrieval that answers in another technique than the
  one asked for with probability ρ (backends.NoncompliantBackend);
* `{kind: verbose, inner: <backend>}`: another backend's proofs padded (backends.VerboseBackend);
* `{kind: lm, steps: n}`: a small language model the `proofrank_lm` job trains for n steps on
  the corpus (lm.train_lm), sampled through hf_backend.CausalLMBackend;
* `{kind: hf, folder: <path>}`: a local `transformers` causal-LM folder (paper scale).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

KINDS = ("retrieval", "noncompliant", "verbose", "lm", "hf")
TRAINED = "lm"
"""The kind of backend the workflow trains (one `proofrank_lm` job each)."""


def backends_of(params: Mapping[str, Any], kind: str) -> list[str]:
    """The names of the backends of one kind, in params order."""
    return [name for name, spec in params["backends"].items() if spec["kind"] == kind]


def trained_backends(params: Mapping[str, Any]) -> list[str]:
    """The backends that get a `proofrank_lm` training job."""
    return backends_of(params, TRAINED)


def check_params(params: Mapping[str, Any]) -> None:
    """Checks the schema cannot express: a verbose backend wraps another backend that is not
    verbose; the claims name backends of the right kinds; a judge that can judge the corpus."""
    backends = params["backends"]
    for name, spec in backends.items():
        if spec["kind"] == "verbose":
            inner = spec["inner"]
            if inner not in backends or backends[inner]["kind"] == "verbose":
                raise ValueError(
                    f"proofrank.backends.{name}.inner: {inner!r} must be another backend of "
                    "proofrank.backends, not a verbose one"
                )
    claims = params["claims"]
    wanted = {"noncompliant": "noncompliant", "compliant": "retrieval"}
    for key, kind in wanted.items():
        name = claims[key]
        if name not in backends or backends[name]["kind"] != kind:
            raise ValueError(
                f"proofrank.claims.{key}: {name!r} must be a backend of kind {kind!r} in "
                "proofrank.backends"
            )
    if backends[claims["compliant"]].get("mode") != "random":
        raise ValueError(
            f"proofrank.claims.compliant: {claims['compliant']!r} must be random retrieval, the "
            "non-compliant backend's compliant twin"
        )
    for pair in claims["derived"]:
        stray = [name for name in pair if name not in backends]
        if stray:
            raise ValueError(f"proofrank.claims.derived: {stray} are not in proofrank.backends")
    corpus = params["corpus"]
    if corpus["format"] == "naturalproofs" and not corpus["files"]:
        raise ValueError("proofrank.corpus: the naturalproofs format needs `files`")
    if params["judge"]["kind"] == "lm" and not params["judge"].get("folder"):
        raise ValueError("proofrank.judge: an lm judge needs the `folder` of its model")
