"""Text mode: sentences, parsing errors and the closed vocabulary."""

from __future__ import annotations

import pytest

from reprolab.studies.visual_queries.text import (
    PAD,
    build_vocabulary,
    encode,
    state_to_text,
    text_to_state,
)


def test_sentence_names_colour_shape_and_cell():
    assert state_to_text(((0, 0, 0), (1, 2, 4))) == "red square top-left ; blue circle centre"


def test_bad_clauses_are_named():
    with pytest.raises(ValueError, match="'red square'"):
        text_to_state("red square")
    with pytest.raises(ValueError, match="unknown word"):
        text_to_state("red hexagon centre")


def test_encode_pads_and_cuts():
    vocabulary = build_vocabulary(["which scene ?"])
    ids = encode("which scene ?", vocabulary, 5)
    assert len(ids) == 5 and ids[-1] == vocabulary[PAD] and ids[0] == vocabulary["which"]
    assert len(encode("red square top-left ; red square top-left", vocabulary, 3)) == 3
