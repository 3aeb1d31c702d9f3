import pytest

from reprolab.core.provenance import cpu_vendor, kernel_signature, provenance


def test_provenance_records_code_packages_params_and_platform():
    doc = provenance("ndfa", "ci", [0, 1], 1, {"lr": 0.1})
    assert doc["threads"] == 1 and doc["scale"] == "ci"
    assert len(doc["params_sha256"]) == 64
    assert doc["packages"]["torch"].startswith("2.13.0")
    assert set(doc["git"]) == {"sha", "dirty"}
    assert doc["params_sha256"] != provenance("ndfa", "ci", [0, 1], 1, {"lr": 0.2})["params_sha256"]


def test_provenance_records_the_lock_and_the_kernel_configuration():
    doc = provenance("ndfa", "ci", [0], 1, {})
    assert len(doc["requirements_lock_sha256"]) == 64
    kernels = doc["kernels"]
    assert kernels["torch_capability"] in {"DEFAULT", "AVX2", "AVX512"}
    assert kernels["torch_blas"] == "mkl"
    assert set(kernels["environment"]) >= {"ATEN_CPU_CAPABILITY", "MKL_CBWR"}
    assert kernels["numpy_blas"] and kernels["cpu_model"]
    assert "cpu_model" not in kernel_signature(kernels)


@pytest.mark.parametrize(
    ("model", "vendor"),
    [
        ("Intel(R) Xeon(R) Processor", "Intel"),
        ("Intel(R) Core(TM) i7-1185G7 @ 3.00GHz", "Intel"),
        ("AMD EPYC", "AMD"),
        ("AMD Ryzen 9 7950X 16-Core Processor", "AMD"),
        ("", "unknown"),
    ],
)
def test_cpu_vendor_is_read_from_the_model_name(model, vendor):
    assert cpu_vendor(model) == vendor


def test_the_vendor_is_part_of_the_kernel_signature():
    """Two records that differ only in the CPU vendor are not byte-comparable (MKL's branch)."""
    record = provenance("ndfa", "ci", [0], 1, {})["kernels"]
    amd, intel = ({**record, "cpu_model": m} for m in ("AMD EPYC", "Intel(R) Xeon(R) Processor"))
    assert kernel_signature(amd) != kernel_signature(intel)
    other_intel = {**intel, "cpu_model": "Intel(R) Core(TM) i5-8250U CPU @ 1.60GHz"}
    assert kernel_signature(other_intel) == kernel_signature(intel)
