"""Text mode: symbolic states as sentences, and the word vocabulary the small models use.

A state reads "red square top-left ; blue circle centre", one clause per sprite in shape
order; `text_to_state` parses it back (the oracle answers text items through this parse, so a
template that lost information would show up as an oracle error). Words are separated by
spaces, so `tokenize` is a split and the vocabulary is closed: colours, shapes, cell names,
the question words and the separator.
"""

from __future__ import annotations

from collections.abc import Iterable

from reprolab.preprocess.video.synth import CELL_NAMES, COLOUR_NAMES, SHAPES, State

SEPARATOR = ";"
PAD, UNK = "<pad>", "<unk>"


def state_to_text(state: State) -> str:
    """The sentence of a state."""
    return f" {SEPARATOR} ".join(
        f"{COLOUR_NAMES[colour]} {SHAPES[shape]} {CELL_NAMES[cell]}"
        for shape, colour, cell in state
    )


def text_to_state(text: str) -> State:
    """Parse a sentence of `state_to_text` back into the state; ValueError names a bad clause."""
    sprites = []
    for clause in text.split(SEPARATOR):
        words = clause.split()
        if len(words) != 3:
            raise ValueError(f"state clause {clause!r}: expected 'colour shape cell'")
        colour, shape, cell = words
        try:
            sprites.append(
                (SHAPES.index(shape), COLOUR_NAMES.index(colour), CELL_NAMES.index(cell))
            )
        except ValueError as exc:
            raise ValueError(f"state clause {clause!r}: unknown word ({exc})") from exc
    return tuple(sorted(sprites))


def tokenize(text: str) -> list[str]:
    """Words of a sentence (the templates separate every token by a space)."""
    return text.split()


def build_vocabulary(texts: Iterable[str]) -> dict[str, int]:
    """Word → id over the closed vocabulary plus every word in `texts` (sorted, so stable)."""
    words = set(COLOUR_NAMES) | set(SHAPES) | set(CELL_NAMES) | {SEPARATOR}
    for text in texts:
        words.update(tokenize(text))
    return {word: index for index, word in enumerate([PAD, UNK, *sorted(words)])}


def encode(text: str, vocabulary: dict[str, int], length: int) -> list[int]:
    """Token ids of `text`, cut or padded to `length`."""
    ids = [vocabulary.get(word, vocabulary[UNK]) for word in tokenize(text)][:length]
    return ids + [vocabulary[PAD]] * (length - len(ids))
