"""normlift's paper-scale readers on tiny files written in the real formats: a 3DGS
``point_cloud.ply`` (activations checked against hand-computed values), PLY in big-endian and
ascii with every type and a ragged face list, a ScanNet labels mesh with faces after the vertices,
COLMAP models as .bin and .txt giving the same cameras (K and [R | t] from known quaternions),
label PNGs, the ScanNet class mapping and the nearest-point label transfer; bad input (undistorted
cameras missing, a missing property, a truncated file, a colour label image) named in the error."""

from __future__ import annotations

import math
import re
import struct
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from reprolab.studies.normlift.formats import (
    SCANNET20_NYU40_IDS,
    read_colmap,
    read_gaussian_ply,
    read_label_png,
    read_ply,
    read_scannet_labels,
    scannet_class_index,
    transfer_labels,
)

PLY_NAMES = {
    "i1": "char",
    "u1": "uchar",
    "i2": "short",
    "u2": "ushort",
    "i4": "int",
    "u4": "uint",
    "f4": "float",
    "f8": "double",
}
MODEL_NAMES = {0: "SIMPLE_PINHOLE", 1: "PINHOLE", 2: "SIMPLE_RADIAL", 4: "OPENCV"}
GAUSSIAN_FIELDS = (
    ["x", "y", "z", "nx", "ny", "nz", "f_dc_0", "f_dc_1", "f_dc_2"]
    + [f"f_rest_{i}" for i in range(45)]
    + ["opacity", "scale_0", "scale_1", "scale_2", "rot_0", "rot_1", "rot_2", "rot_3"]
)  # the INRIA 3DGS point_cloud.ply vertex layout (SH degree 3)


def write_ply(
    path: Path, fmt: str, vertex: np.ndarray, faces: list[list[int]] | None = None
) -> Path:
    """A PLY file as the field's writers lay it out: the header, the `vertex` rows (a structured
    array; property types from its fields) and, if given, a ``face`` element with
    ``property list uchar int vertex_indices``."""
    header = ["ply", f"format {fmt} 1.0", "comment test file", f"element vertex {len(vertex)}"]
    header += [f"property {PLY_NAMES[vertex.dtype[n].str[1:]]} {n}" for n in vertex.dtype.names]
    if faces is not None:
        header += [f"element face {len(faces)}", "property list uchar int vertex_indices"]
    text = "\n".join([*header, "end_header"]) + "\n"
    if fmt == "ascii":
        rows = [" ".join(repr(row[n].item()) for n in vertex.dtype.names) for row in vertex]
        rows += [" ".join(map(str, [len(face), *face])) for face in faces or []]
        path.write_text(text + "\n".join(rows) + "\n")
        return path
    endian = "<" if fmt == "binary_little_endian" else ">"
    body = vertex.astype(vertex.dtype.newbyteorder(endian)).tobytes()
    body += b"".join(struct.pack(f"{endian}B{len(f)}i", len(f), *f) for f in faces or [])
    path.write_bytes(text.encode() + body)
    return path


def gaussian_vertex(rows: list[dict[str, float]], drop: str | None = None) -> np.ndarray:
    """3DGS vertex rows (float32; properties not given are 0), without the property `drop`."""
    names = [name for name in GAUSSIAN_FIELDS if name != drop]
    vertex = np.zeros(len(rows), dtype=[(name, "f4") for name in names])
    for i, row in enumerate(rows):
        for name, value in row.items():
            if name != drop:
                vertex[name][i] = value
    return vertex


GAUSSIANS = [
    {"x": 1.5, "y": -2.25, "z": 0.125, "opacity": 0.0, "rot_0": 2.0, "f_dc_0": 0.3},
    {"x": 0.0, "y": 4.0, "z": -8.0, "opacity": math.log(3.0), "scale_0": math.log(2.0),
     "scale_1": math.log(0.5), "scale_2": math.log(4.0), "rot_0": 1.0, "rot_1": 1.0,
     "rot_2": 1.0, "rot_3": 1.0},
    {"opacity": -math.log(3.0), "scale_0": -1.0, "rot_1": 3.0, "rot_3": 4.0},
]  # fmt: skip


def test_gaussian_ply_applies_the_3dgs_activations(tmp_path: Path) -> None:
    path = write_ply(
        tmp_path / "point_cloud.ply", "binary_little_endian", gaussian_vertex(GAUSSIANS)
    )
    scene = read_gaussian_ply(path)
    np.testing.assert_array_equal(scene.means, [[1.5, -2.25, 0.125], [0.0, 4.0, -8.0], [0, 0, 0]])
    assert scene.means.dtype == np.float64
    np.testing.assert_allclose(scene.opacity, [0.5, 0.75, 0.25], rtol=1e-6)
    np.testing.assert_allclose(
        scene.scales, [[1, 1, 1], [2, 0.5, 4], [1 / math.e, 1, 1]], rtol=1e-6
    )
    np.testing.assert_allclose(
        scene.rotations, [[1, 0, 0, 0], [0.5, 0.5, 0.5, 0.5], [0, 0.6, 0, 0.8]], rtol=1e-6
    )


def test_gaussian_ply_missing_property_is_named(tmp_path: Path) -> None:
    path = tmp_path / "point_cloud.ply"
    write_ply(path, "binary_little_endian", gaussian_vertex(GAUSSIANS, drop="rot_3"))
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))}.*'rot_3'"):
        read_gaussian_ply(path)


def test_gaussian_ply_zero_quaternion_is_rejected(tmp_path: Path) -> None:
    path = write_ply(tmp_path / "g.ply", "binary_little_endian", gaussian_vertex([{"x": 1.0}]))
    with pytest.raises(ValueError, match="zero quaternion"):
        read_gaussian_ply(path)


def test_truncated_ply_names_the_file(tmp_path: Path) -> None:
    path = write_ply(
        tmp_path / "point_cloud.ply", "binary_little_endian", gaussian_vertex(GAUSSIANS)
    )
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))}.*'vertex'.*truncated"):
        read_gaussian_ply(path)


def test_big_endian_ply_reads_every_type(tmp_path: Path) -> None:
    types = ["i1", "u1", "i2", "u2", "i4", "u4", "f4", "f8"]
    rows = [
        (-5, 250, -30000, 60000, -2_000_000_000, 4_000_000_000, 1.5, -2.25e-7),
        (127, 0, 1, 65535, 7, 1, -0.0625, 1e300),
    ]
    vertex = np.array(rows, dtype=[(f"p{i}", t) for i, t in enumerate(types)])
    path = write_ply(tmp_path / "be.ply", "binary_big_endian", vertex)
    assert path.read_bytes().split(b"end_header\n")[1][:2] == b"\xfb\xfa"  # -5, 250
    columns = read_ply(path)["vertex"]
    assert list(columns) == [f"p{i}" for i in range(8)]
    for i, t in enumerate(types):
        column = columns[f"p{i}"]
        assert column.dtype == np.dtype(t) and column.dtype.isnative
        np.testing.assert_array_equal(column, [row[i] for row in rows])


def test_ascii_ply_with_aliases_and_ragged_lists(tmp_path: Path) -> None:
    path = tmp_path / "ascii.ply"
    path.write_text(
        "ply\nformat ascii 1.0\ncomment aliases, a quad and a scalar after a list\n"
        "element vertex 3\nproperty float32 x\nproperty int16 y\nproperty uint8 label\n"
        "element face 2\nproperty list uint8 int32 vertex_indices\nproperty uchar flags\n"
        "end_header\n1.5 -2 7\n0.25 300 255\n-1e-3 0 0\n3 0 1 2 9\n4 0 1 2 0 1\n"
    )
    ply = read_ply(path)
    np.testing.assert_array_equal(ply["vertex"]["x"], np.array([1.5, 0.25, -1e-3], np.float32))
    np.testing.assert_array_equal(ply["vertex"]["y"], [-2, 300, 0])
    np.testing.assert_array_equal(ply["vertex"]["label"], [7, 255, 0])
    assert ply["vertex"]["y"].dtype == np.int16 and ply["vertex"]["label"].dtype == np.uint8
    faces = ply["face"]["vertex_indices"]
    assert faces.dtype == object and [f.tolist() for f in faces] == [[0, 1, 2], [0, 1, 2, 0]]
    np.testing.assert_array_equal(ply["face"]["flags"], [9, 1])


def test_ascii_ply_bad_value_is_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.ply"
    path.write_text(
        "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty uchar label\n"
        "end_header\n1.0 2.5\n"
    )
    with pytest.raises(ValueError, match=r"bad\.ply: element 'vertex' property 'label'"):
        read_ply(path)


SCANNET_POINTS = [(0.0, 0.0, 0.0), (1.0, 0.5, 0.25), (2.0, -1.0, 3.5), (0.5, 0.5, 0.5)]
SCANNET_LABELS = [1, 39, 0, 40]
SCANNET_FACES = [[0, 1, 2], [1, 2, 3]]


def scannet_vertex() -> np.ndarray:
    """The vertex layout of ScanNet's ``_vh_clean_2.labels.ply``: x, y, z, rgba, label."""
    dtype = [("x", "f4"), ("y", "f4"), ("z", "f4"), ("red", "u1"), ("green", "u1")]
    dtype += [("blue", "u1"), ("alpha", "u1"), ("label", "u2")]
    rows = [
        (*p, 10, 20, 30, 255, label)
        for p, label in zip(SCANNET_POINTS, SCANNET_LABELS, strict=True)
    ]
    return np.array(rows, dtype=dtype)


@pytest.mark.parametrize("fmt", ["binary_little_endian", "binary_big_endian", "ascii"])
def test_mesh_label_ply_with_faces_after_the_vertices(tmp_path: Path, fmt: str) -> None:
    path = write_ply(
        tmp_path / "scene0000_00_vh_clean_2.labels.ply", fmt, scannet_vertex(), SCANNET_FACES
    )
    ply = read_ply(path)
    assert list(ply) == ["vertex", "face"]
    assert [f.tolist() for f in ply["face"]["vertex_indices"]] == SCANNET_FACES
    points, nyu40 = read_scannet_labels(path)
    np.testing.assert_array_equal(points, SCANNET_POINTS)
    np.testing.assert_array_equal(nyu40, SCANNET_LABELS)
    assert points.dtype == np.float64 and nyu40.dtype == np.int64


def test_reading_stops_after_the_wanted_elements(tmp_path: Path) -> None:
    path = write_ply(tmp_path / "mesh.ply", "binary_little_endian", scannet_vertex(), SCANNET_FACES)
    path.write_bytes(path.read_bytes()[:-5])  # the last face is cut
    with pytest.raises(ValueError, match=r"mesh\.ply: element 'face' row 1 .*truncated"):
        read_ply(path)
    assert list(read_ply(path, ("vertex",))) == ["vertex"]
    np.testing.assert_array_equal(read_scannet_labels(path)[1], SCANNET_LABELS)
    with pytest.raises(ValueError, match=r"mesh\.ply: no PLY element 'edge'; elements found"):
        read_ply(path, ("edge",))


def test_scannet_labels_missing_label_is_named(tmp_path: Path) -> None:
    vertex = np.array([(0.0, 0.0, 0.0)], dtype=[("x", "f4"), ("y", "f4"), ("z", "f4")])
    path = write_ply(tmp_path / "scene_vh_clean_2.labels.ply", "ascii", vertex)
    with pytest.raises(ValueError, match=r"labels\.ply: .*no property 'label'"):
        read_scannet_labels(path)


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("plx\nformat ascii 1.0\nend_header\n", "not a PLY file"),
        ("ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\n", "no 'end_header'"),
        ("ply\nformat binary_middle_endian 1.0\nend_header\n", "expected 'format FORMAT 1.0'"),
        ("ply\nformat ascii 1.0\nelement v 1\nproperty float128 x\nend_header\n", "'float128'"),
        ("ply\nformat ascii 1.0\nproperty float x\nend_header\n", "before any element"),
        ("ply\nelement v 0\nend_header\n", "no 'format' line"),
    ],
)
def test_bad_ply_header_is_named(tmp_path: Path, header: str, message: str) -> None:
    path = tmp_path / "bad.ply"
    path.write_text(header)
    with pytest.raises(ValueError, match=rf"bad\.ply: .*{re.escape(message)}"):
        read_ply(path)


def test_missing_ply_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nothing.ply"):
        read_ply(tmp_path / "nothing.ply")


# ---------------------------------------------------------------------------------------------
# COLMAP

S = math.sqrt(0.5)
CAMERAS = [(1, 1, 640, 480, [500.0, 520.0, 320.0, 240.0]), (2, 0, 800, 600, [700.0, 400.0, 300.0])]
IMAGES = [  # (image id, qvec w x y z, tvec, camera id, name, 2-D points)
    (1, [S, 0.0, 0.0, S], [1.0, 2.0, 3.0], 1, "frame_b.jpg", [(1.5, 2.5, 7), (3.0, 4.0, -1)]),
    (2, [0.0, 2.0, 0.0, 0.0], [0.0, 0.0, -2.0], 2, "frame_a.jpg", []),
]
EXPECTED = {  # name: (width, height, K, Rt), by hand: 180° about x; 90° about z
    "frame_a.jpg": (800, 600, [[700, 0, 400], [0, 700, 300], [0, 0, 1]],
                    [[1, 0, 0, 0], [0, -1, 0, 0], [0, 0, -1, -2]]),
    "frame_b.jpg": (640, 480, [[500, 0, 320], [0, 520, 240], [0, 0, 1]],
                    [[0, -1, 0, 1], [1, 0, 0, 2], [0, 0, 1, 3]]),
}  # fmt: skip


def write_colmap_bin(folder: Path, cameras: list, images: list) -> Path:
    """``cameras.bin`` and ``images.bin`` in COLMAP's binary layout (read_write_model.py)."""
    folder.mkdir(parents=True, exist_ok=True)
    data = struct.pack("<Q", len(cameras))
    for camera_id, model_id, width, height, params in cameras:
        data += struct.pack(f"<iiQQ{len(params)}d", camera_id, model_id, width, height, *params)
    (folder / "cameras.bin").write_bytes(data)
    data = struct.pack("<Q", len(images))
    for image_id, qvec, tvec, camera_id, name, points in images:
        data += struct.pack("<i4d3di", image_id, *qvec, *tvec, camera_id) + name.encode() + b"\0"
        data += struct.pack("<Q", len(points)) + b"".join(struct.pack("<ddq", *p) for p in points)
    (folder / "images.bin").write_bytes(data)
    return folder


def write_colmap_txt(folder: Path, cameras: list, images: list) -> Path:
    """``cameras.txt`` and ``images.txt`` as COLMAP writes them (comment header; two lines per
    image, the second the 2-D points, empty when there are none)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["# Camera list with one line of data per camera:", "#   CAMERA_ID, MODEL, ..."]
    for camera_id, model_id, width, height, params in cameras:
        numbers = " ".join(map(repr, params))
        lines.append(f"{camera_id} {MODEL_NAMES[model_id]} {width} {height} {numbers}")
    (folder / "cameras.txt").write_text("\n".join(lines) + "\n")
    lines = ["# Image list with two lines of data per image:", "# Number of images: 2"]
    for image_id, qvec, tvec, camera_id, name, points in images:
        lines.append(" ".join(map(repr, [image_id, *qvec, *tvec, camera_id])) + f" {name}")
        lines.append(" ".join(f"{x!r} {y!r} {point_id}" for x, y, point_id in points))
    (folder / "images.txt").write_text("\n".join(lines) + "\n")
    return folder


def check_cameras(cameras: list) -> None:
    """`cameras` are those of `EXPECTED`, sorted by name."""
    assert [c.name for c in cameras] == sorted(EXPECTED)
    for camera in cameras:
        width, height, k, rt = EXPECTED[camera.name]
        assert (camera.width, camera.height) == (width, height)
        np.testing.assert_array_equal(camera.K, k)
        np.testing.assert_allclose(camera.Rt, rt, atol=1e-12)


@pytest.mark.parametrize("writer", [write_colmap_bin, write_colmap_txt])
def test_colmap_model_gives_the_cameras(tmp_path: Path, writer) -> None:
    check_cameras(read_colmap(writer(tmp_path / "sparse" / "0", CAMERAS, IMAGES)))


def test_colmap_prefers_bin_and_finds_sparse_0(tmp_path: Path) -> None:
    model = write_colmap_bin(tmp_path / "sparse" / "0", CAMERAS, IMAGES)
    write_colmap_txt(model, [(1, 1, 1, 1, [1.0] * 4), (2, 0, 1, 1, [1.0] * 3)], IMAGES)
    check_cameras(read_colmap(tmp_path))


@pytest.mark.parametrize(
    ("writer", "camera", "model"),
    [
        (write_colmap_bin, (1, 2, 640, 480, [500.0, 320.0, 240.0, 0.01]), "SIMPLE_RADIAL"),
        (write_colmap_txt, (1, 4, 640, 480, [500.0, 520.0, 320.0, 240.0] + [0.01] * 4), "OPENCV"),
    ],
)
def test_colmap_distorted_camera_asks_for_undistortion(
    tmp_path: Path, writer, camera: tuple, model: str
) -> None:
    folder = writer(tmp_path, [camera, CAMERAS[1]], IMAGES)
    with pytest.raises(ValueError, match=rf"camera 1 uses the {model} model.*image_undistorter"):
        read_colmap(folder)


def test_colmap_missing_and_truncated_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"cameras\.bin \+ images\.bin"):
        read_colmap(tmp_path)
    folder = write_colmap_bin(tmp_path / "model", CAMERAS, IMAGES)
    (folder / "images.bin").write_bytes((folder / "images.bin").read_bytes()[:-100])
    with pytest.raises(ValueError, match=r"images\.bin: .*'frame_b\.jpg'.*truncated"):
        read_colmap(folder)


def test_colmap_text_missing_points_line_is_named(tmp_path: Path) -> None:
    folder = write_colmap_txt(tmp_path, CAMERAS, IMAGES)
    lines = (folder / "images.txt").read_text().splitlines()
    (folder / "images.txt").write_text("\n".join(lines[:3] + lines[4:]) + "\n")
    with pytest.raises(ValueError, match=r"images\.txt: line 4: .*'frame_b\.jpg'"):
        read_colmap(folder)


# ---------------------------------------------------------------------------------------------
# labels


@pytest.mark.parametrize(
    "ids",
    [np.array([[0, 3, 12], [255, 1, 2]], np.uint8), np.array([[0, 1000], [65535, 7]], np.uint16)],
)
def test_label_png_8_and_16_bit(tmp_path: Path, ids: np.ndarray) -> None:
    path = tmp_path / "semantic_class_0.png"
    Image.fromarray(ids).save(path)
    labels = read_label_png(path)
    np.testing.assert_array_equal(labels, ids.astype(np.int64))
    assert labels.dtype == np.int64


def test_label_png_rgb_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "vis_sem_0.png"
    Image.fromarray(np.zeros((2, 2, 3), np.uint8)).save(path)
    with pytest.raises(ValueError, match=r"vis_sem_0\.png: .*found mode 'RGB'"):
        read_label_png(path)


def test_scannet_class_index() -> None:
    nyu40 = np.array([[0, 1, 39], [13, 40, 24]])
    np.testing.assert_array_equal(scannet_class_index(nyu40), [[-1, 0, 19], [-1, -1, 14]])
    assert scannet_class_index(np.array(SCANNET20_NYU40_IDS)).tolist() == list(range(20))
    np.testing.assert_array_equal(scannet_class_index(np.array([3, 7, 5]), (7, 3)), [1, 0, -1])
    with pytest.raises(ValueError, match="distinct"):
        scannet_class_index(nyu40, (3, 3))


def test_transfer_labels_with_a_distance_cutoff() -> None:
    points = np.array([[0.0, 0.0, 0.0], [10.0, 0.0, 0.0], [0.0, 10.0, 0.0]])
    labels = np.array([5, 7, -1])
    queries = np.array([[1.0, 0.0, 0.0], [9.5, 0.5, 0.0], [5.0, 5.0, 5.0], [2.0, 0, 0], [0, 9, 0]])
    np.testing.assert_array_equal(transfer_labels(points, labels, queries, 2.0), [5, 7, -1, 5, -1])
    np.testing.assert_array_equal(transfer_labels(points, labels, queries, 1.5), [5, 7, -1, -1, -1])
    np.testing.assert_array_equal(transfer_labels(points[:0], labels[:0], queries, 9.0), [-1] * 5)
