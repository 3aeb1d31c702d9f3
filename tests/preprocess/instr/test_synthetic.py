"""Picking a synthetic generator by name: the same bytes as calling it directly, bad names."""

from __future__ import annotations

import re

import pytest

from reprolab.core.params import ParamsError
from reprolab.preprocess.instr import synthcit, visarith
from reprolab.preprocess.instr.synthetic import (
    GENERATORS,
    build_synthetic_stream,
    check_synthetic_streams,
    read_synthetic,
)
from tests.preprocess.instr.test_synthcit import TINY_SPEC, file_hashes

VISARITH = {
    "seed": 2,
    "noise": 5.0,
    "stroke_gain": [0.7, 1.0],
    "tasks": [{"name": "sft", "train": 6, "test": 3}],
}


def test_without_a_generator_key_the_stream_is_synthcit(tmp_path):
    built = build_synthetic_stream(TINY_SPEC, tmp_path / "dispatch")
    direct = synthcit.build_synthcit(synthcit.SynthCITSpec.from_params(TINY_SPEC), tmp_path / "d")
    assert built == tmp_path / "dispatch" / "stream.yaml"
    assert file_hashes(built.parent) == file_hashes(direct.parent)
    named = build_synthetic_stream(TINY_SPEC | {"generator": "synthcit"}, tmp_path / "named")
    assert file_hashes(named.parent) == file_hashes(direct.parent)


def test_visarith_by_name_gives_its_own_stream(tmp_path):
    built = build_synthetic_stream(VISARITH | {"generator": "visarith"}, tmp_path / "dispatch")
    spec = visarith.VisArithSpec.from_params(VISARITH)
    direct = visarith.build_visarith(spec, tmp_path / "direct")
    assert file_hashes(built.parent) == file_hashes(direct.parent)
    assert (built.parent / "visarith.h5").is_file()


def test_read_synthetic_gives_the_generator_and_its_spec():
    generator, spec = read_synthetic(VISARITH | {"generator": "visarith"})
    assert generator is GENERATORS["visarith"] and spec == visarith.VisArithSpec.from_params(
        VISARITH
    )
    assert generator.vocabulary(spec) == visarith.vocabulary(spec)
    generator, spec = read_synthetic(TINY_SPEC)
    assert generator.vocabulary(spec) == synthcit.vocabulary(spec)
    assert list(GENERATORS) == ["synthcit", "visarith"]


@pytest.mark.parametrize("name", ["visarith2", "", None, 3, ["visarith"]])
def test_an_unknown_generator_is_refused_naming_the_key_and_the_choices(name):
    expected = f"synthetic stream spec: key 'generator': {name!r}, expected one of "
    with pytest.raises(ParamsError, match=re.escape(expected + "synthcit, visarith")):
        read_synthetic(VISARITH | {"generator": name})


def test_the_chosen_generator_reports_its_own_bad_keys(tmp_path):
    with pytest.raises(ParamsError, match=re.escape("visarith spec: key 'align': unknown")):
        build_synthetic_stream(TINY_SPEC | {"generator": "visarith"}, tmp_path)
    with pytest.raises(ParamsError, match=re.escape("synthcit spec: key 'tasks[0].kind': missing")):
        build_synthetic_stream(VISARITH, tmp_path)
    with pytest.raises(ParamsError, match=re.escape("key '(top)': not a mapping")):
        read_synthetic(["visarith"])
    assert not tmp_path.joinpath("stream.yaml").exists()


def test_the_workflows_check_names_the_stream_of_a_bad_spec():
    streams = {
        "synthcit": {"synthetic": TINY_SPEC},
        "coin": {"stream": "data/raw/coin"},
        "visarith": {"synthetic": VISARITH | {"generator": "visarith", "noise": -1}},
    }
    with pytest.raises(ParamsError, match=re.escape("instr.streams.visarith.synthetic: visarith")):
        check_synthetic_streams(streams)
    check_synthetic_streams({name: streams[name] for name in ("synthcit", "coin")})
