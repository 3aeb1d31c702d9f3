"""Paths of the ssg jobs, as the rule file gets them from the params."""

from __future__ import annotations

from reprolab.studies.ssg.workflow_io import report_wsi, run_files, wsi_inputs, wsi_paths

ROOTS = ("data/wsi", "data/raw/wsi")
SYNTHETIC = {"generator": "wsi", "cohort": "synthetic", "labels": ""}
REAL = {"generator": "wsi", "cohort": "camelyon16", "labels": "data/raw/c16/labels.csv"}


def test_run_files_name_every_method_and_kind():
    files = run_files("results/ssg/runs", ["abmil", "ssg_uot"])
    assert files["metrics_abmil"] == "results/ssg/runs/{dataset}/abmil/seed{seed}/metrics.json"
    assert len(files) == 4 and files["curves_ssg_uot"].endswith("ssg_uot/seed{seed}/curves.h5")


def test_synthetic_cohort_reads_manifest_and_truth_made_by_the_workflow():
    paths = wsi_paths(SYNTHETIC, *ROOTS)
    assert paths == {
        "features": "data/wsi/synthetic/features",
        "labels": "data/raw/wsi/synthetic/manifest.csv",
        "truth": "data/raw/wsi/synthetic/truth",
    }
    assert wsi_inputs(SYNTHETIC, *ROOTS) == paths


def test_real_cohort_labels_are_read_not_declared_and_it_has_no_truth():
    assert wsi_paths(REAL, *ROOTS) == {
        "features": "data/wsi/camelyon16/features",
        "labels": "data/raw/c16/labels.csv",
    }
    assert wsi_inputs(REAL, *ROOTS) == {"features": "data/wsi/camelyon16/features"}
    assert wsi_paths({"generator": "synthmil"}, *ROOTS) == {}


def test_report_shows_the_first_synthetic_cohort_only():
    assert report_wsi({"a": {"generator": "endo"}, "c": REAL}, *ROOTS) == {}
    shown = report_wsi({"c": REAL, "s": SYNTHETIC}, *ROOTS)
    assert shown["dir"] == "data/wsi/synthetic" and shown["tiles"] == "data/wsi/synthetic/tiles"
