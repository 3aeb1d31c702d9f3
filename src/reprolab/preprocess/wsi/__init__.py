"""Whole-slide images: synthetic slides, tissue segmentation, tiling and tile features.

The package follows what CLAM and TRIDENT do (segment tissue on a thumbnail, lay a grid at a
target resolution, store level-0 coordinates in HDF5, embed tiles with a frozen encoder) and
keeps their file formats, so their MIL loaders read our outputs and ours read theirs.
"""
