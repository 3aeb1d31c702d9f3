from reprolab.core.provenance import provenance


def test_provenance_records_code_packages_params_and_platform():
    doc = provenance("ndfa", "ci", [0, 1], 1, {"lr": 0.1})
    assert doc["threads"] == 1 and doc["scale"] == "ci"
    assert len(doc["params_sha256"]) == 64
    assert doc["packages"]["torch"].startswith("2.13.0")
    assert set(doc["git"]) == {"sha", "dirty"}
    assert doc["params_sha256"] != provenance("ndfa", "ci", [0, 1], 1, {"lr": 0.2})["params_sha256"]
