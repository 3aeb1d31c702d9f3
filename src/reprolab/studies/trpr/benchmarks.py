"""trpr's paper-scale benchmarks, read from the files as released into in-memory arrays.

The paper's class-incremental runs (a frozen ViT-B/16 with adapters) use four image
classification benchmarks; `BENCHMARKS` maps each name to the on-disk format it comes in:
- `cifar100`: CIFAR-100's "python version" (`cifar-100-python.tar.gz` unpacked). The folder
  `cifar-100-python/` holds three pickles: `train` and `test`, dicts with bytes keys whose
  `b"data"` is a uint8 array [N, 3072] (each row is 1024 red, then 1024 green, then 1024 blue
  values, each a 32x32 image in row-major order) and whose `b"fine_labels"` is a list of ints
  0..99; and `meta`, whose `b"fine_label_names"` lists the 100 class names as bytes. They are
  read by the project's CIFAR reader (studies.ndfa.formats), whose unpickler builds arrays and
  nothing else. Coarse labels and the other keys are not read.
- `imagenet_r`, `cub`, `vtab`: an image folder with a split level, as the class-incremental PEFT
  code bases (APER/ADAM, EASE, MoE-Adapters) distribute ImageNet-R, CUB-200 and VTAB:
  `<root>/train/<class name>/<image>` and `<root>/test/<class name>/<image>`, images being
  `.jpg`, `.jpeg` or `.png` files (extension in any case).

Choices:
- `root` for `cifar100` is the `cifar-100-python/` folder (the files params declare).
- Classes of an image folder are the sorted names of `train/`'s sub-folders, and label i is the
  i-th of them; `test/` must hold exactly the same class folders (anything else is an error,
  since it would shift labels). A class folder with no image is an error too.
- Files in a class folder that are not images by extension are ignored, and so are hidden files
  (names starting with "."; such as the `._name.jpg` resource forks macOS leaves in archives).
  An image file that Pillow cannot read is an error naming the file, never skipped.
- Every image is converted to RGB and resized to `image_size` x `image_size` with Pillow's
  BICUBIC filter. A folder image first has its shorter side resized to `image_size` (keeping
  the aspect ratio) and is then center-cropped to a square; a CIFAR image (square already) is
  simply resized, and left as it is when `image_size` is 32.
- Order is deterministic: folder images sorted by class, then by file name; CIFAR images in the
  order of the pickle's rows.
- Images come back as uint8 arrays [N, S, S, 3] and labels as int64 arrays [N]; normalising
  pixels for the backbone is left to the caller.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from reprolab.core.progress import progress
from reprolab.studies.ndfa.formats import load_cifar, read_cifar_pickle

BENCHMARKS = {"cifar100": "cifar", "imagenet_r": "folder", "cub": "folder", "vtab": "folder"}
SPLITS = ("train", "test")
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png")
CIFAR_META_KEY = b"fine_label_names"


class BenchmarkFormatError(ValueError):
    """A benchmark file or folder that is not in its released format, or cannot be read."""


@dataclass(frozen=True)
class Benchmark:
    """One benchmark's train and test splits as arrays, with its class names.

    Images are uint8 [N, S, S, 3] (RGB); labels are int64 [N], indices into `class_names`.
    """

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray
    class_names: list[str]


def read_benchmark(name: str, root: str | Path, image_size: int) -> Benchmark:
    """Read benchmark `name` (a key of `BENCHMARKS`) from `root`, images `image_size` square.

    Raises ValueError for an unknown name or a file not in the released format, and
    FileNotFoundError for a missing root, split, or pickle.
    """
    if name not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {name!r}; known: {', '.join(sorted(BENCHMARKS))}")
    if isinstance(image_size, bool) or not isinstance(image_size, int) or image_size < 1:
        raise ValueError(f"image_size must be a positive integer, got {image_size!r}")
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{name}: root folder {root} does not exist")
    if BENCHMARKS[name] == "cifar":
        return read_cifar100(root, image_size)
    return read_image_folder(root, image_size, desc=name)


# CIFAR-100, python version


def _resize_square(images: np.ndarray, image_size: int, desc: str) -> np.ndarray:
    """Square images [N, s, s, 3] resized to [N, image_size, image_size, 3] (BICUBIC)."""
    if images.shape[1] == image_size:
        return np.ascontiguousarray(images)
    out = np.empty((len(images), image_size, image_size, 3), dtype=np.uint8)
    for index in progress(range(len(images)), desc, total=len(images)):
        image = Image.fromarray(images[index])
        out[index] = np.asarray(image.resize((image_size, image_size), Image.Resampling.BICUBIC))
    return out


def read_cifar100(root: str | Path, image_size: int) -> Benchmark:
    """CIFAR-100 (python version) from the `cifar-100-python/` folder `root`, read by the
    project's CIFAR reader (studies.ndfa.formats: a pickle loader that builds arrays only)."""
    folder = Path(root)
    names = read_cifar_pickle(folder / "meta", (CIFAR_META_KEY,))[CIFAR_META_KEY]
    class_names = [n.decode() if isinstance(n, bytes) else str(n) for n in names]
    train_images, train_labels, test_images, test_labels = load_cifar(folder, "cifar100")
    for split, labels in (("train", train_labels), ("test", test_labels)):
        if len(labels) and (labels.min() < 0 or labels.max() >= len(class_names)):
            raise BenchmarkFormatError(
                f"{folder / split}: b'fine_labels' must lie in 0..{len(class_names) - 1} (the "
                f"classes of meta), found {labels.min()}..{labels.max()}"
            )
    channels_last = (0, 2, 3, 1)
    return Benchmark(
        _resize_square(train_images.transpose(channels_last), image_size, "cifar100 train"),
        train_labels,
        _resize_square(test_images.transpose(channels_last), image_size, "cifar100 test"),
        test_labels,
        class_names,
    )


# Image folder with train/ and test/


def _subfolders(folder: Path) -> list[str]:
    """Sorted names of the visible sub-folders of `folder`."""
    return sorted(
        entry.name
        for entry in folder.iterdir()
        if entry.is_dir() and not entry.name.startswith(".")
    )


def _split_folder(root: Path, split: str) -> Path:
    folder = root / split
    if not folder.is_dir():
        raise FileNotFoundError(
            f"{folder}: no such folder (expected `{split}/<class name>/<image>` under {root})"
        )
    return folder


def _check_same_classes(classes: list[str], folder: Path, found: list[str]) -> None:
    """Raise unless `folder` holds exactly the class folders of `train/`."""
    missing = sorted(set(classes) - set(found))
    extra = sorted(set(found) - set(classes))
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing class folder(s) {', '.join(missing)}")
        if extra:
            parts.append(f"extra class folder(s) {', '.join(extra)}")
        raise BenchmarkFormatError(
            f"{folder}: must hold the same class folders as train/; {'; '.join(parts)}"
        )


def _is_image(path: Path) -> bool:
    return (
        path.is_file() and not path.name.startswith(".") and path.suffix.lower() in IMAGE_EXTENSIONS
    )


def _image_files(folder: Path) -> list[Path]:
    """A class folder's image files, sorted by name; raises when it holds none."""
    files = sorted((entry for entry in folder.iterdir() if _is_image(entry)), key=lambda p: p.name)
    if not files:
        raise BenchmarkFormatError(
            f"{folder}: class folder holds no image ({', '.join(IMAGE_EXTENSIONS)} files)"
        )
    return files


def resize_and_center_crop(image: Image.Image, image_size: int) -> Image.Image:
    """Resize so the shorter side is `image_size` (BICUBIC), then crop the central square."""
    width, height = image.size
    scale = image_size / min(width, height)
    new_width = max(image_size, round(width * scale))
    new_height = max(image_size, round(height * scale))
    if (new_width, new_height) != (width, height):
        image = image.resize((new_width, new_height), Image.Resampling.BICUBIC)
    left = (new_width - image_size) // 2
    top = (new_height - image_size) // 2
    return image.crop((left, top, left + image_size, top + image_size))


def read_image(path: Path, image_size: int) -> np.ndarray:
    """One image file as RGB uint8 [image_size, image_size, 3]; unreadable files raise."""
    try:
        with Image.open(path) as image:
            rgb = image.convert("RGB")
    except Exception as error:  # Pillow raises several types for corrupt or foreign files
        raise BenchmarkFormatError(f"{path}: not a readable image ({error})") from error
    return np.asarray(resize_and_center_crop(rgb, image_size), dtype=np.uint8)


def _read_files(files: list[Path], image_size: int, desc: str) -> np.ndarray:
    """Images of `files`, read into one preallocated array [N, S, S, 3]."""
    out = np.empty((len(files), image_size, image_size, 3), dtype=np.uint8)
    for index, path in enumerate(progress(files, desc, total=len(files))):
        out[index] = read_image(path, image_size)
    return out


def _folder_split(
    folder: Path, classes: list[str], image_size: int, desc: str
) -> tuple[np.ndarray, np.ndarray]:
    """A split folder's images, sorted by class then file name, and their labels."""
    files: list[Path] = []
    labels: list[int] = []
    for label, name in enumerate(classes):
        found = _image_files(folder / name)
        files.extend(found)
        labels.extend([label] * len(found))
    images = _read_files(files, image_size, desc)
    return images, np.asarray(labels, dtype=np.int64)


def read_image_folder(root: str | Path, image_size: int, desc: str = "images") -> Benchmark:
    """An image folder `<root>/{train,test}/<class name>/<image>`; classes from `train/`.

    Images are resized (shorter side to `image_size`) and center-cropped; `desc` labels the
    progress bars.
    """
    root = Path(root)
    train_folder = _split_folder(root, "train")
    test_folder = _split_folder(root, "test")
    classes = _subfolders(train_folder)
    if not classes:
        raise BenchmarkFormatError(f"{train_folder}: holds no class folder")
    _check_same_classes(classes, test_folder, _subfolders(test_folder))
    train_images, train_labels = _folder_split(train_folder, classes, image_size, f"{desc} train")
    test_images, test_labels = _folder_split(test_folder, classes, image_size, f"{desc} test")
    return Benchmark(train_images, train_labels, test_images, test_labels, classes)
