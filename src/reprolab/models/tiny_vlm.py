"""Tiny randomly initialised LLaVA models with an offline tokenizer, for tests and ci/smoke runs.

Studies that evaluate or fine-tune a `transformers` vision-language model at paper scale use
this module to get a *real* one of the same family (same classes, processor, image-token
expansion and `save_pretrained` / `from_pretrained` path) that is small, random and built
without touching the network.

Choices:

* Tokenizer: `tokenizers` word-level model. Text is normalised by writing each space as ``▁``
  and split into words (``▁`` optional in front), single digits, single punctuation marks,
  lone ``▁`` and other whitespace (``\\n``), so decoding (``▁`` → space, pieces joined) gives
  the text back exactly. The vocabulary is the special tokens ``<pad> <s> </s> <unk> <image>``
  (ids 0-4, in that order), then ASCII letters, digits and punctuation (bare and with ``▁``),
  ``▁`` and ``\\n``, then the pieces of the words passed in, in order of first appearance.
  Anything else encodes as ``<unk>``. Encoding puts ``<s>`` in front and nothing at the end.
* Model: `LlavaForConditionalGeneration` = CLIP vision tower + two-layer MLP projector + Llama
  text model, all `hidden` wide, `layers` deep, `heads` heads. Weights come from the model's own
  initialiser under `torch.manual_seed(seed)` inside `torch.random.fork_rng`, so the same seed
  gives the same weights and the caller's RNG state is left alone.
* Image tokens: ``vision_feature_select_strategy="default"`` drops CLIP's CLS token, so each
  image gives ``(image_size // patch_size) ** 2`` tokens (`tokens_per_image`); the processor is
  told ``patch_size`` and ``num_additional_image_tokens=1`` (the CLS), so it expands each
  ``<image>`` into exactly that many. ``vision_feature_layer=-1``: with two vision layers,
  LLaVA's usual -2 would leave the last one unused (and untrained when fine-tuning).
* Image processor: `CLIPImageProcessorPil` (the PIL backend, since torchvision is not a
  dependency): shortest edge resized to `image_size`, centre crop to a square, CLIP mean/std.
* No chat template: prompts are plain text written by the studies' prompt builders.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from pathlib import Path

import torch
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from transformers import (
    CLIPImageProcessorPil,
    CLIPVisionConfig,
    LlamaConfig,
    LlavaConfig,
    LlavaForConditionalGeneration,
    LlavaProcessor,
    PreTrainedTokenizerFast,
)

from reprolab.core.io import atomic_dir

PAD, BOS, EOS, UNK, IMAGE = "<pad>", "<s>", "</s>", "<unk>", "<image>"
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK, IMAGE)
SPACE = "▁"
_BASE_CHARACTERS = string.ascii_letters + string.digits + string.punctuation
_PIECE = Regex(f"{SPACE}?[A-Za-z]+|{SPACE}?[0-9]|{SPACE}?[^{SPACE}\\sA-Za-z0-9]|{SPACE}|\\s")


def build_tokenizer(vocab_words: Sequence[str]) -> PreTrainedTokenizerFast:
    """A deterministic word-level tokenizer knowing `vocab_words`, built offline.

    Each word (any string; one holding spaces or punctuation adds all its pieces) is known both
    at the start of a text and after a space. See the module docstring for the vocabulary.
    """
    normalizer = normalizers.Replace(" ", SPACE)
    pre_tokenizer = pre_tokenizers.Split(_PIECE, behavior="isolated")
    pieces: dict[str, None] = {}
    for character in _BASE_CHARACTERS:
        pieces.update({character: None, SPACE + character: None})
    pieces.update({SPACE: None, "\n": None})
    for word in vocab_words:
        if not isinstance(word, str):
            raise TypeError(f"vocab_words must hold strings, got {word!r} ({type(word).__name__})")
        for text in (word, " " + word):
            for piece, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text)):
                pieces[piece] = None
    names = [*SPECIAL_TOKENS, *(p for p in pieces if p not in SPECIAL_TOKENS)]
    vocab = {name: index for index, name in enumerate(names)}
    backend = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    backend.normalizer = normalizer
    backend.pre_tokenizer = pre_tokenizer
    backend.decoder = decoders.Sequence([decoders.Replace(SPACE, " "), decoders.Fuse()])
    backend.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=[(BOS, vocab[BOS])]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token=PAD,
        bos_token=BOS,
        eos_token=EOS,
        unk_token=UNK,
        extra_special_tokens={"image_token": IMAGE},
    )


def tiny_llava_config(
    vocab_size: int,
    image_size: int = 32,
    patch_size: int = 8,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    image_token_id: int = SPECIAL_TOKENS.index(IMAGE),
    max_positions: int = 2048,
) -> LlavaConfig:
    """A LLaVA config with a tiny CLIP vision tower and a tiny Llama text model.

    Token ids for pad/bos/eos follow `build_tokenizer` (0, 1, 2); `image_token_id` must be the
    id of the tokenizer's ``<image>`` token. `max_positions` bounds prompt length in tokens.
    """
    if image_size % patch_size:
        raise ValueError(f"image_size {image_size} is not a multiple of patch_size {patch_size}")
    if hidden % heads:
        raise ValueError(f"hidden {hidden} is not a multiple of heads {heads}")
    if not 0 <= image_token_id < vocab_size:
        raise ValueError(
            f"image_token_id {image_token_id} is outside the vocabulary 0..{vocab_size}"
        )
    vision = CLIPVisionConfig(
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        projection_dim=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        image_size=image_size,
        patch_size=patch_size,
    )
    text = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=max_positions,
        pad_token_id=SPECIAL_TOKENS.index(PAD),
        bos_token_id=SPECIAL_TOKENS.index(BOS),
        eos_token_id=SPECIAL_TOKENS.index(EOS),
    )
    return LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_index=image_token_id,
        image_seq_length=(image_size // patch_size) ** 2,
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )


def tokens_per_image(config: LlavaConfig) -> int:
    """How many image tokens the vision tower of `config` feeds the language model per image."""
    vision = config.vision_config
    tokens = (vision.image_size // vision.patch_size) ** 2 + 1  # patches + CLS
    return tokens - 1 if config.vision_feature_select_strategy == "default" else tokens


def build_tiny_llava(
    tokenizer: PreTrainedTokenizerFast,
    seed: int,
    image_size: int = 32,
    patch_size: int = 8,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    pixel_mean_std: tuple[float, float] | None = None,
) -> tuple[LlavaForConditionalGeneration, LlavaProcessor]:
    """A seeded random tiny LLaVA model (in eval mode) and the matching processor.

    `pixel_mean_std` replaces CLIP's per-channel normalisation by one mean and std for every
    channel (``(0.5, 0.5)`` maps pixel values to [-1, 1]).
    """
    image_token_id = tokenizer.convert_tokens_to_ids(IMAGE)
    if image_token_id is None or image_token_id == tokenizer.unk_token_id:
        raise ValueError(f"the tokenizer has no {IMAGE} token; build it with build_tokenizer")
    config = tiny_llava_config(
        len(tokenizer), image_size, patch_size, hidden, layers, heads, image_token_id
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlavaForConditionalGeneration(config)
    normalisation = {}
    if pixel_mean_std is not None:
        mean, std = pixel_mean_std
        normalisation = {"image_mean": [mean] * 3, "image_std": [std] * 3}
    image_processor = CLIPImageProcessorPil(
        size={"shortest_edge": image_size},
        crop_size={"height": image_size, "width": image_size},
        **normalisation,
    )
    processor = LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=patch_size,
        vision_feature_select_strategy=config.vision_feature_select_strategy,
        num_additional_image_tokens=1,
        image_token=IMAGE,
    )
    return model.eval(), processor


def save_tiny_vlm(
    model: LlavaForConditionalGeneration, processor: LlavaProcessor, folder: str | Path
) -> Path:
    """Save model and processor into `folder` for `from_pretrained`, replacing it whole.

    Written into a sibling folder first and swapped in by `core.io.replace_dir`: a crash at any
    point leaves the whole old model or the whole new one (an old one left aside by a crash is
    put back at the next save, or by `core.io.recover_dir` before a load).
    """
    with atomic_dir(folder) as tmp:
        model.save_pretrained(tmp)
        processor.save_pretrained(tmp)
    return Path(folder)
