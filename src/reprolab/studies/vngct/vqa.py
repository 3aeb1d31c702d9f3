"""VQA accuracy of a generated answer, as the official VQA evaluation computes it.

`normalize_answer` is the official answer normalisation (the VQA challenge's `vqaEval.py`,
which TextVQA's and LLaVA's evaluators reuse): newlines and tabs become spaces, the text is
stripped and lowercased; punctuation is removed, or turned into a space where it separates
words (removed outright when it sits next to a space or the text holds a number with a comma,
"1,000"); a period is dropped unless a digit follows ("2.5" stays); number words up to ten
become digits ("none" is "0"); the articles a, an and the are dropped; contractions written
without their apostrophe get it back ("dont" is "don't").

`vqa_accuracy` scores one answer against the human answers of one question: with several
(VQAv2, VizWiz and TextVQA have ten), ``min(#matching human answers / 3, 1)`` averaged over
the subsets that leave one human answer out, as the official script does; with a single
ground-truth answer (GQA, ScienceQA's option letters, ImageNet's class names, OCR-VQA), plain
exact match of the normalised texts.

Choice: both texts are always normalised, lowercasing included, as the EvalAI/TextVQA
processor does; the VQAv2 script processes them only when the human answers disagree (its
answers are lowercased already, so the two differ only for answers that are not).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

NUMBER_WORDS = {
    "none": "0",
    "zero": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
}
ARTICLES = frozenset({"a", "an", "the"})
PUNCTUATION = (";", "/", "[", "]", '"', "{", "}", "(", ")", "=", "+", "\\", "_", "-", ">", "<",
               "@", "`", ",", "?", "!")  # fmt: skip
"""The official list, in its order (the order matters: each mark is handled in turn)."""
CONTRACTIONS = {
    "aint": "ain't", "arent": "aren't", "cant": "can't", "couldve": "could've",
    "couldnt": "couldn't", "couldn'tve": "couldn't've", "couldnt've": "couldn't've",
    "didnt": "didn't", "doesnt": "doesn't", "dont": "don't", "hadnt": "hadn't",
    "hadnt've": "hadn't've", "hadn'tve": "hadn't've", "hasnt": "hasn't", "havent": "haven't",
    "hed": "he'd", "hed've": "he'd've", "he'dve": "he'd've", "hes": "he's", "howd": "how'd",
    "howll": "how'll", "hows": "how's", "Id've": "I'd've", "I'dve": "I'd've", "Im": "I'm",
    "Ive": "I've", "isnt": "isn't", "itd": "it'd", "itd've": "it'd've", "it'dve": "it'd've",
    "itll": "it'll", "let's": "let's", "maam": "ma'am", "mightnt": "mightn't",
    "mightnt've": "mightn't've", "mightn'tve": "mightn't've", "mightve": "might've",
    "mustnt": "mustn't", "mustve": "must've", "neednt": "needn't", "notve": "not've",
    "oclock": "o'clock", "oughtnt": "oughtn't", "ow's'at": "'ow's'at", "'ows'at": "'ow's'at",
    "'ow'sat": "'ow's'at", "shant": "shan't", "shed've": "she'd've", "she'dve": "she'd've",
    "she's": "she's", "shouldve": "should've", "shouldnt": "shouldn't",
    "shouldnt've": "shouldn't've", "shouldn'tve": "shouldn't've", "somebody'd": "somebodyd",
    "somebodyd've": "somebody'd've", "somebody'dve": "somebody'd've",
    "somebodyll": "somebody'll", "somebodys": "somebody's", "someoned": "someone'd",
    "someoned've": "someone'd've", "someone'dve": "someone'd've", "someonell": "someone'll",
    "someones": "someone's", "somethingd": "something'd", "somethingd've": "something'd've",
    "something'dve": "something'd've", "somethingll": "something'll", "thats": "that's",
    "thered": "there'd", "thered've": "there'd've", "there'dve": "there'd've",
    "therere": "there're", "theres": "there's", "theyd": "they'd", "theyd've": "they'd've",
    "they'dve": "they'd've", "theyll": "they'll", "theyre": "they're", "theyve": "they've",
    "twas": "'twas", "wasnt": "wasn't", "wed've": "we'd've", "we'dve": "we'd've",
    "weve": "we've", "werent": "weren't", "whatll": "what'll", "whatre": "what're",
    "whats": "what's", "whatve": "what've", "whens": "when's", "whered": "where'd",
    "wheres": "where's", "whereve": "where've", "whod": "who'd", "whod've": "who'd've",
    "who'dve": "who'd've", "wholl": "who'll", "whos": "who's", "whove": "who've",
    "whyll": "why'll", "whyre": "why're", "whys": "why's", "wont": "won't",
    "wouldve": "would've", "wouldnt": "wouldn't", "wouldnt've": "wouldn't've",
    "wouldn'tve": "wouldn't've", "yall": "y'all", "yall'll": "y'all'll", "y'allll": "y'all'll",
    "yall'd've": "y'all'd've", "y'alld've": "y'all'd've", "y'all'dve": "y'all'd've",
    "youd": "you'd", "youd've": "you'd've", "you'dve": "you'd've", "youll": "you'll",
    "youre": "you're", "youve": "you've",
}  # fmt: skip
"""The official table (its capitalised keys never match lowercased text; kept as published)."""
_PERIOD = re.compile(r"\.(?!\d)")
"""A period not followed by a digit (what the official ``(?!<=\\d)(\\.)(?!\\d)`` matches)."""
_NUMBER_COMMA = re.compile(r"\d,\d")
MATCHES_FOR_FULL_CREDIT = 3


def _punctuation(text: str) -> str:
    """Marks next to a space, or any mark in a text with a number like 1,000, are removed;
    others become a space; then periods not followed by a digit are removed."""
    out = text
    drop_all = _NUMBER_COMMA.search(text) is not None
    for mark in PUNCTUATION:
        if drop_all or mark + " " in text or " " + mark in text:
            out = out.replace(mark, "")
        else:
            out = out.replace(mark, " ")
    return _PERIOD.sub("", out)


def _digits_articles(text: str) -> str:
    """Number words to digits, articles dropped, contractions given their apostrophe."""
    words = [NUMBER_WORDS.get(word, word) for word in text.lower().split()]
    return " ".join(CONTRACTIONS.get(word, word) for word in words if word not in ARTICLES)


def normalize_answer(text: str) -> str:
    """The official VQA normalisation of one answer (see the module docstring)."""
    text = text.replace("\n", " ").replace("\t", " ").strip().lower()
    return _digits_articles(_punctuation(text))


def vqa_accuracy(prediction: str, answers: Sequence[str]) -> float:
    """VQA accuracy of `prediction` against the human `answers` of one question: the mean over
    leave-one-out subsets of min(matches / 3, 1) with several answers, exact match of the
    normalised texts with one. ValueError when `answers` is empty."""
    if not answers:
        raise ValueError("vqa_accuracy needs at least one ground-truth answer, got none")
    predicted = normalize_answer(prediction)
    hits = [normalize_answer(answer) == predicted for answer in answers]
    if len(hits) == 1:
        return float(hits[0])
    matches = sum(hits)
    subsets = [min((matches - hit) / MATCHES_FOR_FULL_CREDIT, 1.0) for hit in hits]
    return sum(subsets) / len(subsets)
