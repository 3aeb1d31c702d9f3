"""The benchmark readers, on small files written in each set's released format: a well-formed file
is read in order with its quoting and escapes undone, a malformed line is skipped and recorded by
file and line while the good ones are kept, a missing file's error names its path, a file with no
valid line raises ValueError, and the dispatchers name the sets they know."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reprolab.studies.overcorrection.text_sets import (
    LabelledText,
    Passage,
    QAExample,
    read_agnews,
    read_nq_open,
    read_passages,
    read_popqa,
    read_qa_set,
    read_sst2,
    read_subj,
    read_text_set,
    read_trec,
    read_triviaqa,
)


def write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    """Write `text` to `path` byte for byte (no newline translation) and return the path."""
    path.write_bytes(text.encode(encoding))
    return path


SST2 = (
    "sentence\tlabel\n"
    "hide new secretions from the parental units \t0\n"
    'the " twist " is that it has none \t0\n'
    "that loves its characters and communicates something rather beautiful \t1\n"
)
AGNEWS = (
    '"3","Wall St. Bears Claw Back Into the Black (Reuters)","Reuters - Short-sellers are'
    ' seeing green again."\n'
    '"4","Oracle #39;s bid","Oracle said ""yes"" to the\\nbid &lt;b&gt;today&lt;/b&gt;"\n'
    '"2","Phelps wins gold",""\n'
)
TREC = (
    "DESC:manner How did serfdom develop in and then leave Russia ?\n"
    "ENTY:cremat What films featured the character Popeye Doyle ?\n"
    "HUM:ind Who was Gal\xe9rius ?\n"
)
POPQA_HEADER = "id\tsubj\tprop\tobj\ts_pop\tquestion\tpossible_answers\n"
POPQA = (
    POPQA_HEADER + "4222362\tGeorge Rankin\toccupation\tpolitician\t142\t"
    "What is George Rankin's occupation?\t"
    '"[""politician"", ""political leader"", ""politician""]"\n'
    "1624346\tDrum\tgenre\tjazz\t3\tWhat genre is Drum?\t"
    '["jazz", "jazz music"]\n'
)
NQ_OPEN = (
    '{"question": "where did they film hot tub time machine", '
    '"answer": ["Fernie Alpine Resort"]}\n'
    '{"question": "who has the right of way in international waters", '
    '"answer": ["Neither", " Neither "]}\n'
)
TRIVIAQA = {
    "Data": [
        {
            "Answer": {
                "Aliases": ["Sunset Blvd", "Sunset Boulevard", "West Sunset Boulevard"],
                "NormalizedValue": "sunset boulevard",
                "Type": "WikipediaEntity",
                "Value": "Sunset Boulevard",
            },
            "EntityPages": [],
            "Question": "Which Lloyd Webber musical premiered in the US on 10th December 1993?",
            "QuestionId": "tc_33",
            "SearchResults": [],
        },
        {
            "Answer": {"Aliases": ["Sinclair Lewis"], "Value": "Sinclair Lewis"},
            "Question": "Who was the man behind The Chipmunks? ",
            "QuestionId": "tc_40",
        },
    ],
    "Domain": "Wikipedia",
    "Version": 1.0,
}
PASSAGES = (
    "id\ttext\ttitle\n"
    '1\t"Aaron Aaron ( or ; ""Ahärôn"") is a prophet, high priest, and the brother of Moses."'
    "\tAaron\n"
    "2\tSo the Lord said unto Moses\tAaron\n"
)


def test_sst2_reads_its_tsv_with_quotes_taken_literally(tmp_path):
    text_set = read_sst2(write(tmp_path / "train.tsv", SST2))
    assert text_set.name == "sst2" and text_set.label_words == ("negative", "positive")
    assert text_set.examples == (
        LabelledText("hide new secretions from the parental units", 0),
        LabelledText('the " twist " is that it has none', 0),
        LabelledText("that loves its characters and communicates something rather beautiful", 1),
    )
    assert text_set.skipped == ()


def test_sst2_skips_bad_lines_by_file_and_line(tmp_path):
    bad = SST2 + "no label here\ngood film\t2\n   \t1\nfine\t1\n"
    text_set = read_sst2(write(tmp_path / "dev.tsv", bad))
    assert [example.text for example in text_set.examples][-1] == "fine"
    assert len(text_set.examples) == 4
    assert text_set.skipped == (
        "dev.tsv:5: 1 columns, expected 2",
        "dev.tsv:6: label '2' not in 0, 1",
        "dev.tsv:7: empty text",
    )


def test_sst2_refuses_another_header(tmp_path):
    with pytest.raises(ValueError, match="not SST-2's"):
        read_sst2(write(tmp_path / "test.tsv", "index\tsentence\n0\tuneasy mishmash\n"))


def test_agnews_joins_title_and_description_and_undoes_escapes(tmp_path):
    text_set = read_agnews(write(tmp_path / "train.csv", AGNEWS))
    assert text_set.label_words == ("world", "sports", "business", "technology")
    assert text_set.examples == (
        LabelledText(
            "Wall St. Bears Claw Back Into the Black (Reuters) Reuters - Short-sellers are seeing"
            " green again.",
            2,
        ),
        LabelledText('Oracle \'s bid Oracle said "yes" to the bid <b>today</b>', 3),
        LabelledText("Phelps wins gold", 1),
    )


def test_agnews_skips_bad_rows(tmp_path):
    bad = AGNEWS + '"5","Title","Text"\n"1","only two"\n"2"," ",""\n'
    text_set = read_agnews(write(tmp_path / "test.csv", bad))
    assert len(text_set.examples) == 3
    assert text_set.skipped == (
        "test.csv:4: label '5' not in 1, 2, 3, 4",
        "test.csv:5: 2 columns, expected 3",
        "test.csv:6: empty text",
    )


def test_agnews_limit_keeps_the_first_valid_rows(tmp_path):
    path = write(tmp_path / "train.csv", AGNEWS)
    assert [example.label for example in read_agnews(path, limit=2).examples] == [2, 3]
    with pytest.raises(ValueError, match="limit"):
        read_agnews(path, limit=0)


def test_trec_reads_latin1_lines_by_coarse_class(tmp_path):
    text_set = read_trec(write(tmp_path / "TREC_10.label", TREC, "latin-1"))
    assert text_set.label_words[:2] == ("abbreviation", "description")
    assert text_set.examples == (
        LabelledText("How did serfdom develop in and then leave Russia ?", 1),
        LabelledText("What films featured the character Popeye Doyle ?", 2),
        LabelledText("Who was Galérius ?", 3),
    )


def test_trec_skips_bad_lines(tmp_path):
    bad = TREC + "XYZ:foo What is it ?\nDESC How ?\nNUM:date \n"
    text_set = read_trec(write(tmp_path / "train_5500.label", bad, "latin-1"))
    assert len(text_set.examples) == 3
    assert text_set.skipped == (
        "train_5500.label:4: label 'XYZ' not in ABBR, DESC, ENTY, HUM, LOC, NUM",
        "train_5500.label:5: label 'DESC' is not COARSE:fine",
        "train_5500.label:6: empty text",
    )


def subj_folder(root: Path, plot: str, quote: str) -> Path:
    """A subjectivity v1.0 folder with the two files' contents (latin-1)."""
    root.mkdir()
    write(root / "plot.tok.gt9.5000", plot, "latin-1")
    write(root / "quote.tok.gt9.5000", quote, "latin-1")
    return root


def test_subj_reads_the_objective_file_then_the_subjective_one(tmp_path):
    folder = subj_folder(
        tmp_path / "rotten_imdb",
        "the movie begins in the past .\nà paris , a young man meets a girl . \n",
        "smart and alert , thirteen conversations is a gem .\n",
    )
    text_set = read_subj(folder)
    assert text_set.label_words == ("objective", "subjective")
    assert text_set.examples == (
        LabelledText("the movie begins in the past .", 0),
        LabelledText("à paris , a young man meets a girl .", 0),
        LabelledText("smart and alert , thirteen conversations is a gem .", 1),
    )


def test_subj_skips_empty_lines_naming_their_file(tmp_path):
    folder = subj_folder(tmp_path / "subj", "one .\n\ntwo .\n", "  \nthree .\n")
    text_set = read_subj(folder)
    assert [example.label for example in text_set.examples] == [0, 0, 1]
    assert text_set.skipped == (
        "plot.tok.gt9.5000:2: empty text",
        "quote.tok.gt9.5000:1: empty text",
    )


def test_subj_needs_both_files(tmp_path):
    folder = tmp_path / "subj"
    folder.mkdir()
    write(folder / "plot.tok.gt9.5000", "one .\n", "latin-1")
    with pytest.raises(FileNotFoundError, match="quote.tok.gt9.5000"):
        read_subj(folder)


def test_nq_open_reads_json_lines(tmp_path):
    qa_set = read_nq_open(write(tmp_path / "NQ-open.dev.jsonl", NQ_OPEN))
    assert qa_set.name == "nq_open"
    assert qa_set.examples == (
        QAExample("where did they film hot tub time machine", ("Fernie Alpine Resort",), None),
        QAExample("who has the right of way in international waters", ("Neither",), None),
    )


def test_nq_open_skips_bad_lines(tmp_path):
    bad = (
        NQ_OPEN + '{"question": "q"\n{"question": "q"}\n'
        '{"question": " ", "answer": ["a"]}\n{"question": "q", "answer": []}\n'
    )
    qa_set = read_nq_open(write(tmp_path / "nq.jsonl", bad))
    assert len(qa_set.examples) == 2
    assert qa_set.skipped[0].startswith("nq.jsonl:3: bad JSON")
    assert qa_set.skipped[1:] == (
        "nq.jsonl:4: missing key 'answer'",
        "nq.jsonl:5: empty question",
        "nq.jsonl:6: no answer",
    )


def test_popqa_reads_quoted_and_unquoted_answer_lists(tmp_path):
    qa_set = read_popqa(write(tmp_path / "popQA.tsv", POPQA))
    assert qa_set.examples == (
        QAExample(
            "What is George Rankin's occupation?",
            ("politician", "political leader"),
            "occupation",
        ),
        QAExample("What genre is Drum?", ("jazz", "jazz music"), "genre"),
    )


def test_popqa_skips_bad_rows(tmp_path):
    bad = POPQA + '1\ts\tgenre\to\t3\tQ?\tnot json\n2\ts\tgenre\n3\ts\tgenre\to\t3\t\t["a"]\n'
    qa_set = read_popqa(write(tmp_path / "popQA.tsv", bad))
    assert len(qa_set.examples) == 2
    assert qa_set.skipped[0].startswith("popQA.tsv:4: bad JSON")
    assert qa_set.skipped[1:] == (
        "popQA.tsv:5: 3 columns, expected 7",
        "popQA.tsv:6: empty question",
    )


def test_popqa_needs_its_columns(tmp_path):
    with pytest.raises(ValueError, match="possible_answers"):
        read_popqa(write(tmp_path / "popQA.tsv", "id\tquestion\tprop\n1\tQ?\tgenre\n"))


def test_triviaqa_puts_the_value_first_then_the_other_aliases(tmp_path):
    qa_set = read_triviaqa(write(tmp_path / "wikipedia-dev.json", json.dumps(TRIVIAQA)))
    assert qa_set.examples == (
        QAExample(
            "Which Lloyd Webber musical premiered in the US on 10th December 1993?",
            ("Sunset Boulevard", "Sunset Blvd", "West Sunset Boulevard"),
            None,
        ),
        QAExample("Who was the man behind The Chipmunks?", ("Sinclair Lewis",), None),
    )


def test_triviaqa_skips_bad_entries_by_index(tmp_path):
    data = {
        "Data": [
            {"Question": "no answer?"},
            *TRIVIAQA["Data"],
            {"Question": "", "Answer": {"Value": "x", "Aliases": []}},
        ]
    }
    qa_set = read_triviaqa(write(tmp_path / "web-dev.json", json.dumps(data)))
    assert len(qa_set.examples) == 2
    assert qa_set.skipped == (
        "web-dev.json:Data[0]: missing key 'Answer'",
        "web-dev.json:Data[3]: empty question",
    )


def test_triviaqa_refuses_a_file_that_is_not_its_json(tmp_path):
    with pytest.raises(ValueError, match="'Data' list"):
        read_triviaqa(write(tmp_path / "dev.json", '{"data": []}'))


def test_passages_undo_csv_quoting(tmp_path):
    store = read_passages(write(tmp_path / "psgs_w100.tsv", PASSAGES))
    assert store.passages == (
        Passage(
            "1",
            "Aaron",
            'Aaron Aaron ( or ; "Ahärôn") is a prophet, high priest, and the brother of Moses.',
        ),
        Passage("2", "Aaron", "So the Lord said unto Moses"),
    )


def test_passages_skip_bad_rows_located_where_they_start(tmp_path):
    bad = PASSAGES + '3\t\tEmpty\n4\t"two\nlines"\tT\n5\tonly two\n6\ttext\t\n7\tmore\tT\n'
    store = read_passages(write(tmp_path / "psgs_w100.tsv", bad), limit=4)
    assert [passage.id for passage in store.passages] == ["1", "2", "4", "6"]
    assert store.passages[2].text == "two\nlines"
    assert store.skipped == (
        "psgs_w100.tsv:4: empty text",
        "psgs_w100.tsv:7: 2 columns, expected 3",
    )


READERS = {
    "sst2": (read_sst2, "train.tsv", "sentence\tlabel\nx\t7\n", "SST-2"),
    "agnews": (read_agnews, "train.csv", '"9","a","b"\n', "AG News"),
    "trec": (read_trec, "TREC_10.label", "FOO:bar x\n", "TREC"),
    "nq_open": (read_nq_open, "nq.jsonl", "[]\n", "NQ-open"),
    "popqa": (read_popqa, "popQA.tsv", POPQA_HEADER + "1\ts\tp\to\t3\tQ?\t[]\n", "PopQA"),
    "triviaqa": (read_triviaqa, "dev.json", '{"Data": [{}]}', "TriviaQA"),
    "passages": (read_passages, "psgs_w100.tsv", "id\ttext\ttitle\n1\t \tT\n", "psgs_w100"),
}


@pytest.mark.parametrize("name", READERS)
def test_a_missing_file_is_named_with_what_it_should_be(tmp_path, name):
    reader, file_name, _, what = READERS[name]
    path = tmp_path / "absent" / file_name
    with pytest.raises(FileNotFoundError) as error:
        reader(path)
    assert str(path) in str(error.value) and what in str(error.value)


def test_a_missing_subj_folder_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="plot.tok.gt9.5000"):
        read_subj(tmp_path / "absent")


@pytest.mark.parametrize("name", READERS)
def test_a_file_without_a_valid_line_raises(tmp_path, name):
    reader, file_name, contents, _ = READERS[name]
    path = write(tmp_path / file_name, contents)
    with pytest.raises(ValueError, match="no valid example") as error:
        reader(path)
    assert str(path) in str(error.value) and f"{file_name}:" in str(error.value)


def test_an_empty_subj_folder_raises(tmp_path):
    with pytest.raises(ValueError, match="no valid example"):
        read_subj(subj_folder(tmp_path / "subj", "\n", ""))


def test_the_dispatchers_read_by_name_and_list_the_known_sets(tmp_path):
    sst2 = write(tmp_path / "train.tsv", SST2)
    assert read_text_set("sst2", sst2, limit=1) == read_sst2(sst2, limit=1)
    nq = write(tmp_path / "nq.jsonl", NQ_OPEN)
    assert read_qa_set("nq_open", nq) == read_nq_open(nq)
    with pytest.raises(ValueError, match="'imdb'.*sst2, agnews, trec, subj"):
        read_text_set("imdb", sst2)
    with pytest.raises(ValueError, match="'squad'.*nq_open, popqa, triviaqa"):
        read_qa_set("squad", nq)
