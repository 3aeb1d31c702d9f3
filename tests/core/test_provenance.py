from reprolab.core.provenance import provenance


def test_provenance_records_code_packages_params_and_platform():
    doc = provenance("ndfa", "ci", [0, 1], 1, {"lr": 0.1})
    assert doc["threads"] == 1 and doc["scale"] == "ci"
    assert len(doc["params_sha256"]) == 64
    assert doc["packages"]["torch"].startswith("2.13.0")
    assert set(doc["git"]) == {"sha", "dirty"}
    assert doc["params_sha256"] != provenance("ndfa", "ci", [0, 1], 1, {"lr": 0.2})["params_sha256"]


def test_provenance_records_the_lock_and_the_kernel_configuration():
    from reprolab.core.provenance import kernel_signature

    doc = provenance("ndfa", "ci", [0], 1, {})
    assert len(doc["requirements_lock_sha256"]) == 64
    kernels = doc["kernels"]
    assert kernels["torch_capability"] in {"DEFAULT", "AVX2", "AVX512"}
    assert kernels["torch_blas"] == "mkl"
    assert set(kernels["environment"]) >= {"ATEN_CPU_CAPABILITY", "MKL_CBWR"}
    assert kernels["numpy_blas"] and kernels["cpu_model"]
    assert "cpu_model" not in kernel_signature(kernels)
