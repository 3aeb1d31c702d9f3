"""Video preprocessing: frame-exact frame extraction built on PyAV.

`probe` reads a file's stream facts, `sampling` picks frame indices, `decode` returns exactly
the frames at those indices (the k-th displayed frame of a full sequential decode), `resize`
brings clips to one size, and `frames` runs all of it over a folder of videos into `clips.h5`
and a `process_list.csv` (`reprolab video frames`). `encode.write_mp4` writes H.264 test and
synthetic videos with reproducible bytes, and `synth` simulates and renders the sprite scenes
(with their ground truth) that the smoke-scale datasets are made of.
"""
