import os
import sys

from reprolab.core.progress import job_log


def test_job_log_captures_python_and_native_writes_in_order(tmp_path):
    log = tmp_path / "logs" / "job.log"
    with job_log(log):
        print("python stdout")
        sys.stderr.write("python stderr\n")
        os.write(2, b"native stderr\n")  # what FFmpeg or OpenCV do, bypassing sys.stderr
        os.write(1, b"native stdout\n")
    assert log.read_text().splitlines() == [
        "python stdout",
        "python stderr",
        "native stderr",
        "native stdout",
    ]


def test_job_log_restores_the_descriptors(tmp_path):
    before = os.fstat(2).st_ino
    with job_log(tmp_path / "a.log"):
        assert os.fstat(2).st_ino == os.stat(tmp_path / "a.log").st_ino
    assert os.fstat(2).st_ino == before
