"""Calibration sources: image folders (stated preprocessing), .npz/.npy sets, seeded random; clear errors."""
from __future__ import annotations

import numpy as np
import pytest

from npufit.errors import NpufitError
from npufit.quantize.calibration import ImagePreprocessing, InputSpec, load_calibration

NCHW = [InputSpec("x", (1, 3, 8, 6), np.dtype(np.float32))]


def test_random_is_seeded_per_index_and_warns():
    a = load_calibration("random", NCHW, count=5, seed=3)
    b = load_calibration("random", NCHW, count=50, seed=3)
    assert len(a) == 5 and a.kind == "random"
    np.testing.assert_array_equal(a[4]["x"], b[4]["x"])  # sample i does not depend on how many are drawn
    assert not np.array_equal(a[0]["x"], a[1]["x"])
    assert a[0]["x"].shape == (1, 3, 8, 6) and a[0]["x"].dtype == np.float32
    assert "mean little" in a.warnings[0] or "say little" in a.warnings[0]


def test_random_needs_static_dims():
    dyn = [InputSpec("x", (None, 3, None, None), np.dtype(np.float32))]
    with pytest.raises(NpufitError, match="--input-shape x="):
        load_calibration("random", dyn, count=2)
    s = load_calibration("random", dyn, count=2, input_shapes={"x": (2, 3, 4, 4)})
    assert s[1]["x"].shape == (2, 3, 4, 4)


def test_npz_stacked_and_batched(tmp_path):
    arr = np.arange(4 * 3 * 8 * 6, dtype=np.float64).reshape(4, 3, 8, 6)
    np.savez(tmp_path / "rows.npz", anything=arr)  # one input, one array: names need not match
    s = load_calibration(tmp_path / "rows.npz", NCHW)
    assert len(s) == 4 and s[2]["x"].shape == (1, 3, 8, 6) and s[2]["x"].dtype == np.float32
    np.testing.assert_array_equal(s[2]["x"][0], arr[2])
    np.savez(tmp_path / "stacked.npz", x=arr[:, None])  # [N, 1, 3, 8, 6]
    assert len(load_calibration(tmp_path / "stacked.npz", NCHW)) == 4
    np.save(tmp_path / "one.npy", arr)
    assert len(load_calibration(tmp_path / "one.npy", NCHW)) == 4


def test_npz_multi_input_and_errors(tmp_path):
    specs = [InputSpec("a", (1, 4), np.dtype(np.float32)), InputSpec("b", (1, 2), np.dtype(np.int64))]
    np.savez(tmp_path / "ok.npz", a=np.zeros((6, 4)), b=np.ones((6, 2)))
    s = load_calibration(tmp_path / "ok.npz", specs)
    assert len(s) == 6 and s[0]["b"].dtype == np.int64
    np.savez(tmp_path / "missing.npz", a=np.zeros((6, 4)))
    with pytest.raises(NpufitError, match="no array for input"):
        load_calibration(tmp_path / "missing.npz", specs)
    np.savez(tmp_path / "counts.npz", a=np.zeros((6, 4)), b=np.ones((5, 2)))
    with pytest.raises(NpufitError, match="different sample counts"):
        load_calibration(tmp_path / "counts.npz", specs)
    np.savez(tmp_path / "shape.npz", x=np.zeros((4, 3, 9, 6)))
    with pytest.raises(NpufitError, match="have shape"):
        load_calibration(tmp_path / "shape.npz", NCHW)
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(NpufitError, match="cannot read"):
        load_calibration(tmp_path / "bad.npz", NCHW)
    with pytest.raises(NpufitError, match="a .npy holds one array"):
        np.save(tmp_path / "x.npy", np.zeros((2, 4)))
        load_calibration(tmp_path / "x.npy", specs)
    with pytest.raises(NpufitError, match="no such file"):
        load_calibration(tmp_path / "nope.npz", NCHW)
    (tmp_path / "c.csv").write_text("1,2")
    with pytest.raises(NpufitError, match="unsupported file type"):
        load_calibration(tmp_path / "c.csv", NCHW)


def test_image_folder_preprocessing(tmp_path):
    Image = pytest.importorskip("PIL.Image", reason="Pillow reads calibration images")
    px = np.zeros((20, 30, 3), np.uint8)
    px[..., 0], px[..., 1], px[..., 2] = 255, 51, 0  # R=1.0, G=0.2, B=0.0 after /255
    for i in range(3):
        Image.fromarray(px).save(tmp_path / f"img{i}.png")
    (tmp_path / "notes.txt").write_text("ignored")
    pre = ImagePreprocessing(mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5))
    s = load_calibration(tmp_path, NCHW, image=pre)
    assert len(s) == 3 and s.kind == "images"
    x = s[0]["x"]
    assert x.shape == (1, 3, 8, 6)  # resized to the model's H, W, channels first
    np.testing.assert_allclose(x[0, :, 0, 0], [1.0, -0.6, -1.0], atol=1e-5)
    assert "resize to 8x6" in s.preprocessing and "NCHW" in s.preprocessing and "RGB" in s.preprocessing
    nhwc = [InputSpec("x", (1, 8, 6, 3), np.dtype(np.float32))]
    y = load_calibration(tmp_path, nhwc, image=ImagePreprocessing(bgr=True))[1]["x"]
    assert y.shape == (1, 8, 6, 3)
    np.testing.assert_allclose(y[0, 0, 0], [0.0, 0.2, 1.0], atol=1e-5)  # BGR order
    dyn = [InputSpec("x", (1, 3, None, None), np.dtype(np.float32))]
    with pytest.raises(NpufitError, match="--image-size"):
        load_calibration(tmp_path, dyn)
    assert load_calibration(tmp_path, dyn, image=ImagePreprocessing(size=(5, 7)))[0]["x"].shape == (1, 3, 5, 7)
    with pytest.raises(NpufitError, match="--mean has 2 values"):
        load_calibration(tmp_path, NCHW, image=ImagePreprocessing(mean=(0.1, 0.2)))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(NpufitError, match="no image files"):
        load_calibration(empty, NCHW)
