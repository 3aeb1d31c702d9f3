"""Readers of ViRL39K and MathVista testmini on small files written in the released formats."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from reprolab.studies.hiccr.benchmarks import (
    BenchmarkFormatError,
    BenchmarkItem,
    read_mathvista,
    read_virl39k,
)
from tests.studies.hiccr.release_files import (
    IMAGE_STRUCT,
    mathvista_table,
    png,
    virl_table,
    write_image,
)


def test_virl39k_reads_fields_keeps_file_order_and_notes_skipped_rows(tmp_path: Path) -> None:
    first = write_image(tmp_path, "z.png", 10)
    second = write_image(tmp_path, "a.png", 200)
    rows = [
        {
            "qid": "z9",
            "question": "<image>How many?",
            "answer": "\\boxed{12}",
            "image": ["images/z.png"],
        },
        {
            "qid": "m5",
            "question": "Two",
            "answer": "\\boxed{1}",
            "image": ["images/z.png", "images/a.png"],
        },
        {"qid": "k3", "question": "None", "answer": "\\boxed{1}", "image": []},
        {
            "qid": "a1",
            "question": "Half?",
            "answer": "\\boxed{\\frac{1}{2}}",
            "image": ["images/a.png"],
        },
        {"qid": "b2", "question": "Shape?", "answer": "triangle", "image": ["images/a.png"]},
        {"qid": "c4", "question": "Null", "answer": "\\boxed{2}", "image": None},
    ]
    pq.write_table(virl_table(rows), tmp_path / "39Krelease.parquet")

    items, skipped = read_virl39k(tmp_path / "39Krelease.parquet")

    assert [item.id for item in items] == ["z9", "a1", "b2"]
    assert items[0] == BenchmarkItem("z9", "<image>How many?", first, "12", (), "integer", None)
    assert items[1].answer == "\\frac{1}{2}" and items[1].answer_type == "float"
    assert items[1].image == second
    assert items[2].answer == "triangle" and items[2].answer_type == "text"
    assert len(skipped) == 3
    assert "m5" in skipped[0] and "2 images" in skipped[0]
    assert "k3" in skipped[1] and "no image" in skipped[1]
    assert "c4" in skipped[2] and "no image" in skipped[2]


def test_virl39k_resolves_paths_under_an_explicit_images_root(tmp_path: Path) -> None:
    data = write_image(tmp_path / "unzipped", "q.png", 50)
    (tmp_path / "meta").mkdir()
    rows = [{"qid": "7", "question": "Q", "answer": "\\boxed{-3}", "image": ["images/q.png"]}]
    pq.write_table(virl_table(rows), tmp_path / "meta" / "v.parquet")

    with pytest.raises(BenchmarkFormatError):
        read_virl39k(tmp_path / "meta" / "v.parquet")
    items, skipped = read_virl39k(
        tmp_path / "meta" / "v.parquet", images_root=tmp_path / "unzipped"
    )

    assert skipped == []
    assert items[0].image == data and items[0].answer == "-3" and items[0].answer_type == "integer"


def test_virl39k_reads_embedded_image_structs(tmp_path: Path) -> None:
    data = png(90)
    on_disk = write_image(tmp_path, "p.png", 91)
    rows = [
        {
            "qid": "e1",
            "question": "Q",
            "answer": "\\boxed{2.5}",
            "image": [{"bytes": data, "path": None}],
        },
        {
            "qid": "e2",
            "question": "Q",
            "answer": "\\boxed{B}",
            "image": [{"bytes": None, "path": "images/p.png"}],
        },
        {
            "qid": "e3",
            "question": "Q",
            "answer": "\\boxed{1}",
            "image": [{"bytes": data, "path": None}, {"bytes": data, "path": None}],
        },
    ]
    pq.write_table(virl_table(rows, pa.list_(IMAGE_STRUCT)), tmp_path / "v.parquet")

    items, skipped = read_virl39k(tmp_path / "v.parquet")

    assert [(item.id, item.image, item.answer) for item in items] == [
        ("e1", data, "2.5"),
        ("e2", on_disk, "B"),
    ]
    assert items[0].answer_type == "float" and items[1].answer_type == "text"
    assert len(skipped) == 1 and "e3" in skipped[0] and "2 images" in skipped[0]


def test_virl39k_skips_an_answer_whose_box_never_closes(tmp_path: Path) -> None:
    write_image(tmp_path, "x.png", 3)
    rows = [
        {"qid": "u1", "question": "Q", "answer": "\\boxed{\\frac{1}{2}", "image": ["images/x.png"]},
        {"qid": "u2", "question": "Q", "answer": "\\boxed{4}", "image": ["images/x.png"]},
    ]
    pq.write_table(virl_table(rows), tmp_path / "v.parquet")

    items, skipped = read_virl39k(tmp_path / "v.parquet")

    assert [item.id for item in items] == ["u2"]
    assert len(skipped) == 1 and "u1" in skipped[0] and "not closed" in skipped[0]


def test_virl39k_missing_column_names_the_column_the_file_and_the_columns_found(
    tmp_path: Path,
) -> None:
    table = virl_table([{"qid": "1", "question": "Q", "answer": "1", "image": []}]).drop_columns(
        ["answer"]
    )
    pq.write_table(table, tmp_path / "broken.parquet")

    with pytest.raises(BenchmarkFormatError) as error:
        read_virl39k(tmp_path / "broken.parquet")

    message = str(error.value)
    assert "broken.parquet" in message and "missing column(s) answer" in message
    assert "qid" in message.split("columns found:")[1]


def test_virl39k_missing_image_file_names_the_row_and_the_path(tmp_path: Path) -> None:
    rows = [{"qid": "gone7", "question": "Q", "answer": "\\boxed{1}", "image": ["images/gone.jpg"]}]
    pq.write_table(virl_table(rows), tmp_path / "v.parquet")

    with pytest.raises(BenchmarkFormatError, match=r"gone7.*images/gone\.jpg"):
        read_virl39k(tmp_path / "v.parquet")


def test_unreadable_and_absent_files_are_format_errors(tmp_path: Path) -> None:
    (tmp_path / "junk.parquet").write_bytes(b"not a parquet file at all")

    with pytest.raises(BenchmarkFormatError, match="junk.parquet.*not a readable parquet"):
        read_virl39k(tmp_path / "junk.parquet")
    with pytest.raises(BenchmarkFormatError, match="absent.parquet: no such file"):
        read_mathvista(tmp_path / "absent.parquet")
    assert issubclass(BenchmarkFormatError, ValueError)


def test_mathvista_reads_fields_in_file_order_and_notes_imageless_rows(tmp_path: Path) -> None:
    a, b, c = png(1), png(2), png(3)
    rows = [
        {
            "pid": "10",
            "question": "Which angle?",
            "image": "images/10.jpg",
            "decoded_image": {"bytes": a, "path": "10.jpg"},
            "choices": ["30°", "45°", "60°"],
            "answer": "45°",
            "question_type": "multi_choice",
            "answer_type": "text",
            "query": "Hint: choose.\nQuestion: Which angle?\nChoices:\n(A) 30°\n(B) 45°\n(C) 60°",
        },
        {
            "pid": "2",
            "question": "How long?",
            "image": "images/2.jpg",
            "decoded_image": {"bytes": b, "path": "2.jpg"},
            "precision": 2.0,
            "answer": "1.46",
            "answer_type": "float",
        },
        {
            "pid": "3",
            "question": "Lost",
            "image": None,
            "decoded_image": None,
            "answer": "1",
            "answer_type": "integer",
        },
        {
            "pid": "4",
            "question": "How many?",
            "image": "images/4.jpg",
            "decoded_image": {"bytes": c, "path": "4.jpg"},
            "answer": "7",
            "answer_type": "integer",
            "query": "Hint: integer.\nQuestion: How many?",
        },
    ]
    pq.write_table(mathvista_table(rows), tmp_path / "testmini-00000-of-00001.parquet")

    items, skipped = read_mathvista(tmp_path / "testmini-00000-of-00001.parquet")

    assert [item.id for item in items] == ["10", "2", "4"]
    mc, fl, it = items
    assert mc.question.startswith("Hint: choose.") and mc.image == a
    assert mc.choices == ("30°", "45°", "60°") and mc.answer == "45°" and mc.precision is None
    assert fl.question == "How long?"  # a null query falls back to the question
    assert fl.image == b and fl.precision == 2 and isinstance(fl.precision, int)
    assert fl.choices == () and fl.answer_type == "float"
    assert it == BenchmarkItem("4", "Hint: integer.\nQuestion: How many?", c, "7", (), "integer")
    assert len(skipped) == 1 and "pid 3" in skipped[0] and "no image" in skipped[0]


def test_mathvista_without_query_column_uses_question(tmp_path: Path) -> None:
    rows = [
        {
            "pid": "1",
            "question": "Q?",
            "image": "i.jpg",
            "decoded_image": {"bytes": png(4), "path": None},
            "answer": "x",
            "answer_type": "text",
        }
    ]
    pq.write_table(mathvista_table(rows, with_query=False), tmp_path / "m.parquet")

    items, _ = read_mathvista(tmp_path / "m.parquet")

    assert items[0].question == "Q?"


def test_mathvista_reads_the_image_path_when_bytes_are_absent(tmp_path: Path) -> None:
    data = write_image(tmp_path, "5.png", 77)
    rows = [
        {
            "pid": "5",
            "question": "Q",
            "image": "images/5.png",
            "decoded_image": {"bytes": None, "path": None},
            "answer": "1",
            "answer_type": "integer",
        },
        {
            "pid": "6",
            "question": "Q",
            "image": "images/6.png",
            "decoded_image": None,
            "answer": "1",
            "answer_type": "integer",
        },
    ]
    pq.write_table(mathvista_table(rows), tmp_path / "m.parquet")

    with pytest.raises(BenchmarkFormatError, match=r"pid 6.*images/6\.png"):
        read_mathvista(tmp_path / "m.parquet")
    pq.write_table(mathvista_table(rows[:1]), tmp_path / "m.parquet")
    items, _ = read_mathvista(tmp_path / "m.parquet")
    assert items[0].image == data


def test_mathvista_missing_column_and_unknown_answer_type_are_errors(tmp_path: Path) -> None:
    rows = [
        {
            "pid": "1",
            "question": "Q",
            "image": "i.jpg",
            "decoded_image": {"bytes": png(5), "path": None},
            "answer": "1",
            "answer_type": "number",
        }
    ]
    pq.write_table(mathvista_table(rows).drop_columns(["decoded_image"]), tmp_path / "a.parquet")
    pq.write_table(mathvista_table(rows), tmp_path / "b.parquet")

    with pytest.raises(BenchmarkFormatError, match="a.parquet: missing column.s. decoded_image"):
        read_mathvista(tmp_path / "a.parquet")
    with pytest.raises(BenchmarkFormatError, match="pid 1.*'number'"):
        read_mathvista(tmp_path / "b.parquet")
