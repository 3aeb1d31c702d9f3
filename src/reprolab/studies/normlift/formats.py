"""normlift's readers of the paper-scale file formats: the trained 3D Gaussian Splatting scenes,
their COLMAP cameras and the ground-truth labels of ScanNet and Replica, so that the study lifts
2-D features onto real splats and scores the 3-D segmentation against the benchmarks' labels.

PLY (`read_ply`). A small reader of the PLY formats the field writes: ``binary_little_endian``,
``binary_big_endian`` and ``ascii`` 1.0, with scalar properties of the eight PLY types (char,
uchar, short, ushort, int, uint, float, double and their int8 … float64 aliases) and list
properties (a mesh's ``face`` element with ``vertex_indices``). It returns
{element: {property: array}}, scalar properties as 1-D arrays in native byte order and each list
property as an object array holding one 1-D array per row (the simplest form that is right for
triangles, quads and mixed faces alike; ``np.stack`` makes a triangle mesh's [F, 3]). An element
of scalar properties only is read in one block; one with a list property is read row by row
(every row's length is in the data), which is slow for big meshes, so `elements` lets a caller
stop after the elements it needs: the labels live in the ``vertex`` element, which comes before
the faces. An ascii body is read as one stream of numbers (line breaks are not checked), and
bytes after the last element are ignored. A bad header, a short body or a value of the wrong
type raises ValueError naming the file, the element and the property.

Gaussians (`read_gaussian_ply`). The INRIA 3DGS ``point_cloud.ply`` (Kerbl et al. 2023) holds
one ``vertex`` per Gaussian with x, y, z, nx, ny, nz (zeros), f_dc_0..2 and f_rest_* (the
spherical-harmonics colour), opacity, scale_0..2 and rot_0..3, all as the optimiser's raw
parameters; the reader applies 3DGS's activations: sigmoid to the opacity logit, exp to the log
scales and normalisation to the quaternion (w, x, y, z). The normals and colours are not read:
the study lifts features, it does not render colours.

Cameras (`read_colmap`). The COLMAP sparse model of a 3DGS scene (``<scene>/sparse/0``) as
binary (``cameras.bin`` + ``images.bin``, preferred when present) or text (``cameras.txt`` +
``images.txt``) files, in the layouts of COLMAP's ``scripts/python/read_write_model.py``. Each
registered image becomes a `Camera` with its intrinsics K (COLMAP's pixel convention: the
top-left pixel's centre is at (0.5, 0.5)) and its world-to-camera [R | t] from COLMAP's qvec
(w, x, y, z) and tvec. As in 3DGS only undistorted cameras (SIMPLE_PINHOLE, PINHOLE) are read;
an image whose camera has lens distortion raises a ValueError telling to run
``colmap image_undistorter`` first.

Labels. ScanNet's ``<scene>_vh_clean_2.labels.ply`` mesh holds an NYU40 id per vertex in its
``label`` property (`read_scannet_labels`); `scannet_class_index` maps the ids to a protocol's
classes (`SCANNET20_NYU40_IDS`: the benchmark's 20) and everything else to −1, the ignore
label. Replica's labels (Semantic-NeRF's renders) are single-channel 8- or 16-bit PNGs of class
ids (`read_label_png`). A Gaussian gets its 3-D ground truth from the nearest labelled point
(`transfer_labels`), and −1 when that point is farther than a cutoff: the benchmarks label mesh
vertices, not Gaussians, and a Gaussian far from the mesh (a floater) has no ground truth.
"""

from __future__ import annotations

import struct
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image
from scipy.spatial import cKDTree
from scipy.special import expit

PLY_FORMATS = ("ascii", "binary_little_endian", "binary_big_endian")
"""The PLY body formats `read_ply` reads (version 1.0)."""

PLY_TYPES = {
    "char": "i1",
    "int8": "i1",
    "uchar": "u1",
    "uint8": "u1",
    "short": "i2",
    "int16": "i2",
    "ushort": "u2",
    "uint16": "u2",
    "int": "i4",
    "int32": "i4",
    "uint": "u4",
    "uint32": "u4",
    "float": "f4",
    "float32": "f4",
    "double": "f8",
    "float64": "f8",
}
"""PLY property types (the classic names and their aliases) as numpy type codes."""

GAUSSIAN_PROPERTIES = (
    "x",
    "y",
    "z",
    "opacity",
    "scale_0",
    "scale_1",
    "scale_2",
    "rot_0",
    "rot_1",
    "rot_2",
    "rot_3",
)
"""The ``vertex`` properties of a 3DGS ``point_cloud.ply`` that `read_gaussian_ply` needs."""

COLMAP_MODELS = {
    0: ("SIMPLE_PINHOLE", 3),
    1: ("PINHOLE", 4),
    2: ("SIMPLE_RADIAL", 4),
    3: ("RADIAL", 5),
    4: ("OPENCV", 8),
    5: ("OPENCV_FISHEYE", 8),
    6: ("FULL_OPENCV", 12),
    7: ("FOV", 5),
    8: ("SIMPLE_RADIAL_FISHEYE", 4),
    9: ("RADIAL_FISHEYE", 5),
    10: ("THIN_PRISM_FISHEYE", 12),
}
"""COLMAP's camera models: model id → (name, number of parameters)."""

SCANNET20_NYU40_IDS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 16, 24, 28, 33, 34, 36, 39)
"""The NYU40 ids of the ScanNet benchmark's 20 semantic classes (its ``VALID_CLASS_IDS``), in
class order: wall, floor, cabinet, bed, chair, sofa, table, door, window, bookshelf, picture,
counter, desk, curtain, refrigerator, shower curtain, toilet, sink, bathtub, other furniture."""

LABEL_PNG_MODES = ("L", "I;16", "I;16L", "I;16B", "I")
"""PIL modes of a single-channel label image: 8-bit, 16-bit (PIL opens a 16-bit PNG as one of
the ``I;16`` modes or, in older versions, as ``I``)."""


# ---------------------------------------------------------------------------------------------
# PLY


@dataclass(frozen=True)
class _PlyProperty:
    """One property of a PLY element: a scalar, or a list when `count_dtype` is set."""

    name: str
    dtype: np.dtype  # the (item) type, native byte order
    count_dtype: np.dtype | None = None  # a list's length type


@dataclass(frozen=True)
class _PlyElement:
    """One PLY element: its name, row count and properties, in header order."""

    name: str
    count: int
    properties: tuple[_PlyProperty, ...]


def _ply_type(name: str, path: Path, line: str) -> np.dtype:
    """The numpy dtype of the PLY type `name`; ValueError naming the file and line otherwise."""
    if name not in PLY_TYPES:
        raise ValueError(
            f"{path}: PLY header line {line!r}: unknown property type {name!r} (expected one "
            f"of {', '.join(PLY_TYPES)})"
        )
    return np.dtype(PLY_TYPES[name])


def _ply_property(words: list[str], path: Path, line: str) -> _PlyProperty:
    """A header ``property`` line (scalar or list) as a `_PlyProperty`."""
    if len(words) == 3:
        return _PlyProperty(words[2], _ply_type(words[1], path, line))
    if len(words) == 5 and words[1] == "list":
        count_dtype = _ply_type(words[2], path, line)
        if count_dtype.kind not in "iu":
            raise ValueError(
                f"{path}: PLY header line {line!r}: a list's length type must be an integer type"
            )
        return _PlyProperty(words[4], _ply_type(words[3], path, line), count_dtype)
    raise ValueError(
        f"{path}: PLY header line {line!r}: expected 'property TYPE NAME' or "
        "'property list COUNT_TYPE ITEM_TYPE NAME'"
    )


def _ply_header(data: bytes, path: Path) -> tuple[str, list[_PlyElement], int]:
    """The body format, the elements and the byte offset of the body of a PLY file's bytes;
    ValueError naming the file and the offending line for a malformed header."""
    if not data.startswith((b"ply\n", b"ply\r\n")):
        raise ValueError(f"{path}: not a PLY file: the first line must be 'ply'")
    lines: list[str] = []
    offset = 0
    while not lines or lines[-1].strip() != "end_header":
        end = data.find(b"\n", offset)
        if end < 0 and (offset >= len(data) or data[offset:].strip() != b"end_header"):
            raise ValueError(
                f"{path}: the PLY header has no 'end_header' line (truncated, or not a PLY file?)"
            )
        end = len(data) if end < 0 else end
        lines.append(data[offset:end].decode("latin-1").rstrip("\r"))
        offset = end + 1
    fmt = None
    named: list[tuple[str, int, list[_PlyProperty]]] = []
    for line in lines[1:-1]:
        words = line.split()
        if not words or words[0] in ("comment", "obj_info"):
            continue
        if words[0] == "format":
            if len(words) != 3 or words[1] not in PLY_FORMATS or words[2] != "1.0":
                raise ValueError(
                    f"{path}: PLY header line {line!r}: expected 'format FORMAT 1.0' with FORMAT "
                    f"one of {', '.join(PLY_FORMATS)}"
                )
            fmt = words[1]
        elif words[0] == "element":
            if len(words) != 3 or not words[2].isdigit():
                raise ValueError(f"{path}: PLY header line {line!r}: expected 'element NAME COUNT'")
            if any(words[1] == name for name, _, _ in named):
                raise ValueError(f"{path}: PLY header declares element {words[1]!r} twice")
            named.append((words[1], int(words[2]), []))
        elif words[0] == "property":
            if not named:
                raise ValueError(f"{path}: PLY header line {line!r} comes before any element")
            prop = _ply_property(words, path, line)
            name, _, props = named[-1]
            if any(prop.name == p.name for p in props):
                raise ValueError(
                    f"{path}: PLY element {name!r} declares property {prop.name!r} twice"
                )
            props.append(prop)
        else:
            raise ValueError(f"{path}: PLY header line {line!r}: unknown keyword {words[0]!r}")
    if fmt is None:
        raise ValueError(f"{path}: the PLY header has no 'format' line")
    elements = [_PlyElement(name, count, tuple(props)) for name, count, props in named]
    return fmt, elements, min(offset, len(data))


class _BinaryBody:
    """Reads a binary PLY body from byte `offset` on, in the byte order `endian` ('<' or '>')."""

    def __init__(self, data: bytes, offset: int, endian: str, path: Path) -> None:
        self.data, self.offset, self.endian, self.path = data, offset, endian, path

    def _read(self, dtype: np.dtype, n: int, what: str) -> np.ndarray:
        """`n` values of `dtype` (file byte order) at the current offset, which moves past them;
        ValueError naming the file and `what` when the file ends first."""
        size = n * dtype.itemsize
        if self.offset + size > len(self.data):
            raise ValueError(
                f"{self.path}: {what} needs {size} bytes from byte {self.offset}, but the file "
                f"ends at byte {len(self.data)} (truncated?)"
            )
        values = np.frombuffer(self.data, dtype, n, self.offset)
        self.offset += size
        return values

    def take(self, dtype: np.dtype, n: int, what: str) -> np.ndarray:
        """The next `n` values of `dtype`, in native byte order."""
        return self._read(dtype.newbyteorder(self.endian), n, what).astype(dtype)

    def table(self, element: _PlyElement) -> dict[str, np.ndarray]:
        """All rows of an element of scalar properties, read as one block."""
        dtype = np.dtype([(p.name, p.dtype.newbyteorder(self.endian)) for p in element.properties])
        block = self._read(dtype, element.count, f"element {element.name!r}")
        return {p.name: block[p.name].astype(p.dtype) for p in element.properties}


class _AsciiBody:
    """Reads an ascii PLY body as one stream of whitespace-separated numbers."""

    def __init__(self, body: bytes, path: Path) -> None:
        self.words, self.index, self.path = body.decode("latin-1").split(), 0, path

    def _next(self, n: int, what: str) -> list[str]:
        """The next `n` words; ValueError naming the file and `what` when the file ends first."""
        if self.index + n > len(self.words):
            raise ValueError(
                f"{self.path}: {what} needs {n} more values, but the file ends after "
                f"{len(self.words)} values (truncated?)"
            )
        self.index += n
        return self.words[self.index - n : self.index]

    def _convert(self, words: Sequence[str], dtype: np.dtype, what: str) -> np.ndarray:
        """`words` as an array of `dtype`; ValueError naming the file and `what` otherwise."""
        try:
            return np.array(words, dtype=str).astype(dtype)
        except (ValueError, OverflowError) as exc:
            raise ValueError(
                f"{self.path}: {what} must hold {dtype} values, found {list(words[:4])}"
            ) from exc

    def take(self, dtype: np.dtype, n: int, what: str) -> np.ndarray:
        """The next `n` values as `dtype`."""
        return self._convert(self._next(n, what), dtype, what)

    def table(self, element: _PlyElement) -> dict[str, np.ndarray]:
        """All rows of an element of scalar properties (count × properties values)."""
        width = len(element.properties)
        words = self._next(element.count * width, f"element {element.name!r}")
        return {
            p.name: self._convert(
                words[j::width], p.dtype, f"element {element.name!r} property {p.name!r}"
            )
            for j, p in enumerate(element.properties)
        }


def _read_rows(element: _PlyElement, body: _BinaryBody | _AsciiBody) -> dict[str, np.ndarray]:
    """An element with list properties, row by row: scalars as 1-D arrays, each list property
    as an object array of one 1-D array per row."""
    values: dict[str, list] = {p.name: [] for p in element.properties}
    for row in range(element.count):
        for p in element.properties:
            what = f"element {element.name!r} row {row} property {p.name!r}"
            if p.count_dtype is None:
                values[p.name].append(body.take(p.dtype, 1, what)[0])
                continue
            n = int(body.take(p.count_dtype, 1, what)[0])
            if n < 0:
                raise ValueError(f"{body.path}: {what}: negative list length {n}")
            values[p.name].append(body.take(p.dtype, n, what))
    columns: dict[str, np.ndarray] = {}
    for p in element.properties:
        if p.count_dtype is None:
            columns[p.name] = np.array(values[p.name], dtype=p.dtype)
        else:
            columns[p.name] = np.empty(element.count, dtype=object)
            for row, items in enumerate(values[p.name]):
                columns[p.name][row] = items
    return columns


def read_ply(
    path: str | Path, elements: Collection[str] | None = None
) -> dict[str, dict[str, np.ndarray]]:
    """A PLY file (binary little/big endian or ascii 1.0) as {element: {property: array}}, the
    elements in header order: scalar properties as 1-D arrays (native byte order), list
    properties as object arrays of one 1-D array per row.

    `elements` (default: all) names the elements to return; reading stops after the last of them,
    so the elements after it (a mesh's faces after its vertices) are neither parsed nor checked.
    Raises FileNotFoundError for a missing file and ValueError naming the file (and element and
    property) for a bad header, a missing element, a short body or a malformed value."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (a PLY file was expected)")
    data = path.read_bytes()
    fmt, header, offset = _ply_header(data, path)
    names = [element.name for element in header]
    wanted = set(names if elements is None else elements)
    missing = sorted(wanted - set(names))
    if missing:
        raise ValueError(
            f"{path}: no PLY element {', '.join(map(repr, missing))}; elements found: "
            f"{', '.join(names) or 'none'}"
        )
    body = (
        _AsciiBody(data[offset:], path)
        if fmt == "ascii"
        else _BinaryBody(data, offset, "<" if fmt == "binary_little_endian" else ">", path)
    )
    result: dict[str, dict[str, np.ndarray]] = {}
    for element in header:
        if wanted <= result.keys():
            break
        if all(p.count_dtype is None for p in element.properties):
            columns = body.table(element)
        else:
            columns = _read_rows(element, body)
        if element.name in wanted:
            result[element.name] = columns
    return result


def _columns(
    element: dict[str, np.ndarray], names: Sequence[str], path: Path, what: str
) -> np.ndarray:
    """The properties `names` of a read PLY element as float64 columns [N, len(names)];
    ValueError naming the file and the first missing property (`what` says whose) otherwise."""
    for name in names:
        if name not in element:
            raise ValueError(
                f"{path}: the 'vertex' element has no property {name!r} ({what} holds "
                f"{', '.join(names)}); properties found: {', '.join(element) or 'none'}"
            )
    return np.stack([element[name].astype(np.float64) for name in names], axis=1)


# ---------------------------------------------------------------------------------------------
# 3D Gaussian Splatting


@dataclass(frozen=True)
class GaussianScene:
    """The geometry of a trained 3DGS scene, activated as 3DGS renders it."""

    means: np.ndarray  # [G, 3] float64 world positions
    scales: np.ndarray  # [G, 3] float64 standard deviations along the Gaussian's axes, exp(scale)
    opacity: np.ndarray  # [G] float64 in (0, 1), sigmoid(opacity logit)
    rotations: np.ndarray  # [G, 4] float64 unit quaternions (w, x, y, z)


def read_gaussian_ply(path: str | Path) -> GaussianScene:
    """A 3DGS ``point_cloud.ply`` as a `GaussianScene`: positions as stored, sigmoid of the
    opacity logits, exp of the log scales and the quaternions normalised (as 3DGS's
    activations). ValueError naming the file and the property when one of
    `GAUSSIAN_PROPERTIES` is missing, or naming the rows whose quaternion is zero."""
    path = Path(path)
    vertex = read_ply(path, ("vertex",))["vertex"]
    values = _columns(vertex, GAUSSIAN_PROPERTIES, path, "a 3DGS point_cloud.ply")
    quaternions = values[:, 7:11]
    norms = np.linalg.norm(quaternions, axis=1, keepdims=True)
    zero = np.flatnonzero(norms[:, 0] == 0.0)
    if zero.size:
        raise ValueError(
            f"{path}: rot_0..rot_3 is a zero quaternion in {zero.size} Gaussian(s), the first "
            f"at vertex {zero[0]}; a rotation needs a non-zero quaternion"
        )
    return GaussianScene(
        means=values[:, 0:3],
        scales=np.exp(values[:, 4:7]),
        opacity=expit(values[:, 3]),
        rotations=quaternions / norms,
    )


# ---------------------------------------------------------------------------------------------
# COLMAP cameras


@dataclass(frozen=True)
class Camera:
    """One registered image of a COLMAP model: a pinhole camera and its pose."""

    name: str  # the image's file name, relative to the scene's image folder
    width: int  # pixels
    height: int  # pixels
    K: np.ndarray  # [3, 3] intrinsics (COLMAP's pixel convention)
    Rt: np.ndarray  # [3, 4] world-to-camera [R | t]: x_cam = R x_world + t


@dataclass(frozen=True)
class _Intrinsics:
    """One COLMAP camera as stored: model name, image size and parameters."""

    model: str
    width: int
    height: int
    params: np.ndarray


@dataclass(frozen=True)
class _Image:
    """One COLMAP image as stored: name, qvec (w, x, y, z), tvec and camera id."""

    name: str
    qvec: np.ndarray
    tvec: np.ndarray
    camera_id: int


def _unpack(data: bytes, fmt: str, offset: int, path: Path, what: str) -> tuple[tuple, int]:
    """The values of struct format `fmt` at `offset` and the offset after them; ValueError naming
    the file and `what` when the file ends first."""
    try:
        values = struct.unpack_from(fmt, data, offset)
    except struct.error as exc:
        raise ValueError(
            f"{path}: the file ends inside {what} (at byte {offset} of {len(data)}; truncated?)"
        ) from exc
    return values, offset + struct.calcsize(fmt)


def _read_cameras_bin(path: Path) -> dict[int, _Intrinsics]:
    """COLMAP's ``cameras.bin``: uint64 count, then per camera int32 id, int32 model id, uint64
    width, uint64 height and the model's float64 parameters."""
    data = path.read_bytes()
    (count,), offset = _unpack(data, "<Q", 0, path, "the camera count")
    cameras = {}
    for i in range(count):
        (camera_id, model_id, width, height), offset = _unpack(
            data, "<iiQQ", offset, path, f"camera {i}"
        )
        if model_id not in COLMAP_MODELS:
            raise ValueError(
                f"{path}: camera {camera_id} has unknown model id {model_id} (COLMAP's models: "
                f"{', '.join(f'{k} {name}' for k, (name, _) in COLMAP_MODELS.items())})"
            )
        model, n = COLMAP_MODELS[model_id]
        params, offset = _unpack(data, f"<{n}d", offset, path, f"camera {camera_id}'s parameters")
        cameras[camera_id] = _Intrinsics(model, width, height, np.array(params))
    return cameras


def _read_images_bin(path: Path) -> list[_Image]:
    """COLMAP's ``images.bin``: uint64 count, then per image int32 id, float64 qvec[4] and
    tvec[3], int32 camera id, a null-terminated name, uint64 point count and that many
    (float64 x, float64 y, int64 point3D id), which are skipped."""
    data = path.read_bytes()
    (count,), offset = _unpack(data, "<Q", 0, path, "the image count")
    images = []
    for i in range(count):
        values, offset = _unpack(data, "<i7di", offset, path, f"image {i}")
        end = data.find(b"\x00", offset)
        if end < 0:
            raise ValueError(f"{path}: the file ends inside image {i}'s name (truncated?)")
        name = data[offset:end].decode("utf-8")
        (n_points,), offset = _unpack(data, "<Q", end + 1, path, f"image {name!r}")
        offset += 24 * n_points
        if offset > len(data):
            raise ValueError(
                f"{path}: the file ends inside image {name!r}'s {n_points} 2-D points (truncated?)"
            )
        images.append(_Image(name, np.array(values[1:5]), np.array(values[5:8]), values[8]))
    return images


def _text_numbers(words: Sequence[str], kind: type, path: Path, line: int) -> list:
    """`words` as ints or floats (`kind`); ValueError naming the file and line otherwise."""
    try:
        return [kind(word) for word in words]
    except ValueError as exc:
        raise ValueError(
            f"{path}: line {line}: expected {kind.__name__} values, found {' '.join(words)!r}"
        ) from exc


def _read_cameras_txt(path: Path) -> dict[int, _Intrinsics]:
    """COLMAP's ``cameras.txt``: one ``CAMERA_ID MODEL WIDTH HEIGHT PARAMS[]`` line per camera,
    ``#`` starting a comment line."""
    models = dict(COLMAP_MODELS.values())
    cameras = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if len(words) < 4 or words[1] not in models or len(words) != 4 + models[words[1]]:
            raise ValueError(
                f"{path}: line {number}: expected 'CAMERA_ID MODEL WIDTH HEIGHT PARAMS[]' with "
                f"MODEL one of {', '.join(models)} and its number of parameters, found {line!r}"
            )
        camera_id, width, height = _text_numbers(words[:1] + words[2:4], int, path, number)
        params = _text_numbers(words[4:], float, path, number)
        cameras[camera_id] = _Intrinsics(words[1], width, height, np.array(params))
    return cameras


def _read_images_txt(path: Path) -> list[_Image]:
    """COLMAP's ``images.txt``: per image an ``IMAGE_ID QW QX QY QZ TX TY TZ CAMERA_ID NAME`` line
    and the line after it, its 2-D points (``X Y POINT3D_ID`` triples, maybe none), which is
    checked and skipped; ``#`` starts a comment line."""
    lines = path.read_text().splitlines()
    images = []
    number = 0
    while number < len(lines):
        line = lines[number].strip()
        number += 1
        if not line or line.startswith("#"):
            continue
        words = line.split(maxsplit=9)
        if len(words) != 10:
            raise ValueError(
                f"{path}: line {number}: expected 'IMAGE_ID QW QX QY QZ TX TY TZ CAMERA_ID NAME', "
                f"found {line!r}"
            )
        values = _text_numbers(words[1:8], float, path, number)
        (camera_id,) = _text_numbers(words[8:9], int, path, number)
        points = lines[number].split() if number < len(lines) else []
        number += 1
        if len(points) % 3:
            raise ValueError(
                f"{path}: line {number}: expected the 2-D points of image {words[9]!r} "
                f"(X Y POINT3D_ID triples), found {len(points)} values"
            )
        images.append(_Image(words[9], np.array(values[:4]), np.array(values[4:]), camera_id))
    return images


def _intrinsics_matrix(camera: _Intrinsics, camera_id: int, path: Path) -> np.ndarray:
    """K [3, 3] of a SIMPLE_PINHOLE (f, cx, cy) or PINHOLE (fx, fy, cx, cy) camera; ValueError
    naming the file and camera for a model with lens distortion."""
    if camera.model == "SIMPLE_PINHOLE":
        f, cx, cy = camera.params
        fx, fy = f, f
    elif camera.model == "PINHOLE":
        fx, fy, cx, cy = camera.params
    else:
        raise ValueError(
            f"{path}: camera {camera_id} uses the {camera.model} model, which has lens "
            "distortion; undistort the images first (`colmap image_undistorter`, as 3D Gaussian "
            "Splatting requires: only SIMPLE_PINHOLE and PINHOLE cameras are read)"
        )
    return np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]])


def _rotation_matrix(q: np.ndarray) -> np.ndarray:
    """The rotation [3, 3] of a non-zero quaternion (w, x, y, z), normalised first (COLMAP's
    `qvec2rotmat`)."""
    w, x, y, z = q / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def _model_files(folder: Path) -> tuple[Path, Path]:
    """The (cameras, images) files of a COLMAP model folder, the ``.bin`` pair if both exist,
    else the ``.txt`` pair; FileNotFoundError naming the folder otherwise."""
    for ext in (".bin", ".txt"):
        cameras, images = folder / f"cameras{ext}", folder / f"images{ext}"
        if cameras.is_file() and images.is_file():
            return cameras, images
    found = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
    raise FileNotFoundError(
        f"{folder}: no COLMAP model (cameras.bin + images.bin or cameras.txt + images.txt); "
        f"files found: {', '.join(found) or 'none'}"
    )


def read_colmap(folder: str | Path) -> list[Camera]:
    """The registered images of a COLMAP sparse model as `Camera`s sorted by image name.

    `folder` is the model folder (a 3DGS scene's ``sparse/0``) or the scene folder holding
    ``sparse/0``. Binary files are read when both exist, else the text files. Raises
    FileNotFoundError naming the folder when neither pair is there and ValueError naming the
    file for a malformed or truncated file, an image whose camera is missing or has lens
    distortion, or a zero quaternion."""
    folder = Path(folder)
    if (folder / "sparse" / "0").is_dir():
        folder = folder / "sparse" / "0"
    cameras_path, images_path = _model_files(folder)
    binary = cameras_path.suffix == ".bin"
    cameras = (_read_cameras_bin if binary else _read_cameras_txt)(cameras_path)
    images = (_read_images_bin if binary else _read_images_txt)(images_path)
    result = []
    for image in images:
        if image.camera_id not in cameras:
            raise ValueError(
                f"{images_path}: image {image.name!r} uses camera {image.camera_id}, which "
                f"{cameras_path.name} does not hold (cameras: {sorted(cameras)})"
            )
        if not np.linalg.norm(image.qvec) > 0.0:
            raise ValueError(
                f"{images_path}: image {image.name!r} has qvec {image.qvec.tolist()}, which is "
                "not a rotation (a non-zero quaternion w, x, y, z was expected)"
            )
        camera = cameras[image.camera_id]
        rt = np.concatenate([_rotation_matrix(image.qvec), image.tvec[:, None]], axis=1)
        k = _intrinsics_matrix(camera, image.camera_id, cameras_path)
        result.append(Camera(image.name, int(camera.width), int(camera.height), k, rt))
    return sorted(result, key=lambda camera: camera.name)


# ---------------------------------------------------------------------------------------------
# ground-truth labels


def read_scannet_labels(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """A ScanNet ``<scene>_vh_clean_2.labels.ply`` as (vertex positions [N, 3] float64, NYU40
    ids [N] int64 from the ``label`` property); the faces after the vertices are not read.
    ValueError naming the file and the property when one is missing."""
    path = Path(path)
    vertex = read_ply(path, ("vertex",))["vertex"]
    values = _columns(vertex, ("x", "y", "z", "label"), path, "a ScanNet labels.ply")
    return values[:, :3], vertex["label"].astype(np.int64)


def scannet_class_index(
    nyu40: np.ndarray, protocol_ids: Sequence[int] = SCANNET20_NYU40_IDS
) -> np.ndarray:
    """NYU40 ids (any shape) as class indices 0..C−1 in the order of `protocol_ids` (the
    protocol's C valid ids, default the ScanNet benchmark's 20), −1 (ignore) for every other id."""
    ids = np.asarray(protocol_ids, dtype=np.int64)
    if ids.ndim != 1 or ids.size == 0 or np.unique(ids).size != ids.size:
        raise ValueError(
            f"protocol_ids must be a non-empty list of distinct ids, found {ids.tolist()}"
        )
    values = np.asarray(nyu40, dtype=np.int64)
    order = np.argsort(ids)
    position = np.searchsorted(ids[order], values).clip(max=ids.size - 1)
    return np.where(ids[order][position] == values, order[position], -1)


def read_label_png(path: str | Path) -> np.ndarray:
    """A single-channel 8- or 16-bit label image (Semantic-NeRF's Replica ``semantic_class``
    PNGs) as class ids [H, W] int64. FileNotFoundError for a missing file, ValueError naming the
    file for an unreadable image or one with colour channels (`LABEL_PNG_MODES`)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (a label PNG was expected)")
    try:
        with Image.open(path) as image:
            mode = image.mode
            ids = np.asarray(image)
    except OSError as exc:
        raise ValueError(f"{path}: cannot be read as an image ({exc})") from exc
    if mode not in LABEL_PNG_MODES:
        raise ValueError(
            f"{path}: a label image must hold one channel of 8- or 16-bit class ids (PIL mode "
            f"{' or '.join(LABEL_PNG_MODES)}), found mode {mode!r}; a colour-coded label render "
            "must be mapped to class ids first"
        )
    return ids.astype(np.int64)


def transfer_labels(
    points: np.ndarray, labels: np.ndarray, queries: np.ndarray, max_distance: float
) -> np.ndarray:
    """Per query position [Q, D] the label of the nearest of the labelled `points` [N, D]
    (`cKDTree`; between equidistant points the tree picks one), and −1 where that point is
    farther than `max_distance` (a point at exactly `max_distance` counts). A nearest point
    labelled −1 (ignored) gives −1 too. Returns int64 [Q]."""
    points = np.asarray(points, dtype=np.float64)
    queries = np.asarray(queries, dtype=np.float64)
    labels = np.asarray(labels)
    if points.ndim != 2 or queries.ndim != 2 or points.shape[1] != queries.shape[1]:
        raise ValueError(
            f"points [N, D] and queries [Q, D] must be 2-D with the same D, found shapes "
            f"{points.shape} and {queries.shape}"
        )
    if labels.shape != (len(points),) or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(
            f"labels must be integers [{len(points)}] (one per point), found {labels.dtype} "
            f"{labels.shape}"
        )
    if not max_distance >= 0.0:
        raise ValueError(f"max_distance must be >= 0, found {max_distance}")
    result = np.full(len(queries), -1, dtype=np.int64)
    if len(points) == 0 or len(queries) == 0:
        return result
    bound = np.nextafter(max_distance, np.inf)
    distance, index = cKDTree(points).query(queries, k=1, distance_upper_bound=bound)
    hit = distance <= max_distance
    result[hit] = labels[index[hit]]
    return result
