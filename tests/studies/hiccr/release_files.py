"""Small files in the released formats of ViRL39K and MathVista, for hiccr's tests."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
from PIL import Image

IMAGE_STRUCT = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
PATH_LIST = pa.list_(pa.string())


def png(shade: int) -> bytes:
    """An 8x8 PNG file's bytes; shade makes each image's bytes different."""
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), color=(shade, 255 - shade, 7)).save(buffer, format="PNG")
    return buffer.getvalue()


def virl_table(rows: list[dict], image_type: pa.DataType = PATH_LIST) -> pa.Table:
    """Rows in ViRL39K's released columns (the pass rates, category and source filled in)."""
    schema = pa.schema(
        [
            ("question", pa.string()),
            ("answer", pa.string()),
            ("PassRate_32BTrained", pa.float64()),
            ("PassRate_7BBase", pa.float64()),
            ("category", pa.string()),
            ("source", pa.string()),
            ("qid", pa.string()),
            ("image", image_type),
        ]
    )
    full = [
        {"PassRate_32BTrained": 0.5, "PassRate_7BBase": 0.25, "category": "c", "source": "s"} | row
        for row in rows
    ]
    return pa.Table.from_pylist(full, schema=schema)


def write_image(folder: Path, name: str, shade: int) -> bytes:
    """A PNG written under `folder`/images, as ViRL39K's unzipped images lie; its bytes."""
    data = png(shade)
    (folder / "images").mkdir(parents=True, exist_ok=True)
    (folder / "images" / name).write_bytes(data)
    return data


def mathvista_table(rows: list[dict], with_query: bool = True) -> pa.Table:
    """Rows in MathVista's released columns (unit, question_type and metadata filled in)."""
    fields = [
        ("pid", pa.string()),
        ("question", pa.string()),
        ("image", pa.string()),
        ("decoded_image", IMAGE_STRUCT),
        ("choices", pa.list_(pa.string())),
        ("unit", pa.string()),
        ("precision", pa.float64()),
        ("answer", pa.string()),
        ("question_type", pa.string()),
        ("answer_type", pa.string()),
        ("metadata", pa.struct([("category", pa.string()), ("source", pa.string())])),
    ]
    if with_query:
        fields.append(("query", pa.string()))
    defaults = {
        "unit": None,
        "question_type": "free_form",
        "metadata": {"category": "math-targeted-vqa", "source": "fixture"},
        "choices": None,
        "precision": None,
        "query": None,
    }
    return pa.Table.from_pylist([defaults | row for row in rows], schema=pa.schema(fields))
