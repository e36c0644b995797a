"""The few CUDA runtime calls native TensorRT needs (malloc, copies, one stream), through ctypes on libcudart.

Why ctypes: TensorRT's Python API wants raw device pointers and a stream; pulling in cuda-python, pycuda or
a CUDA torch build just for five calls would make `tensorrt` depend on a second GPU stack.
NOT exercised here (no GPU in this environment); written against the CUDA runtime API reference.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import sys

import numpy as np

from .base import RuntimeUnavailable

_H2D, _D2H = 1, 2  # cudaMemcpyKind


def _candidates() -> list[str]:
    names = [
        ctypes.util.find_library("cudart") or "",
        "libcudart.so",
        "libcudart.so.13",
        "libcudart.so.12",
        "libcudart.so.11.0",
    ]
    for p in sys.path:  # the pip wheels (nvidia-cuda-runtime-cu12/13) keep it under site-packages/nvidia/
        names += sorted(glob.glob(os.path.join(p, "nvidia", "cuda_runtime", "lib", "libcudart.so*")))
        names += sorted(glob.glob(os.path.join(p, "nvidia", "cu*", "lib", "libcudart.so*")))
    return [n for n in names if n]


class Cuda:
    def __init__(self):
        self.lib = None
        for name in _candidates():
            try:
                self.lib = ctypes.CDLL(name)
                break
            except OSError:
                continue
        if self.lib is None:
            raise RuntimeUnavailable("the CUDA runtime library (libcudart) was not found")
        n = ctypes.c_int(0)
        if self.lib.cudaGetDeviceCount(ctypes.byref(n)) != 0 or n.value == 0:
            raise RuntimeUnavailable("no CUDA device is visible (cudaGetDeviceCount)")
        self.lib.cudaMemcpyAsync.argtypes = [
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_int,
            ctypes.c_void_p,
        ]
        self.lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
        self.lib.cudaFree.argtypes = [ctypes.c_void_p]
        self.lib.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
        self.lib.cudaStreamDestroy.argtypes = [ctypes.c_void_p]

    def _ok(self, rc: int, what: str) -> None:
        if rc != 0:
            self.lib.cudaGetErrorString.restype = ctypes.c_char_p
            raise RuntimeError(f"{what} failed: {self.lib.cudaGetErrorString(rc).decode()}")

    def malloc(self, nbytes: int) -> int:
        ptr = ctypes.c_void_p()
        self._ok(self.lib.cudaMalloc(ctypes.byref(ptr), max(int(nbytes), 1)), "cudaMalloc")
        return int(ptr.value)

    def free(self, ptr: int) -> None:
        self.lib.cudaFree(ctypes.c_void_p(ptr))

    def stream(self) -> int:
        s = ctypes.c_void_p()
        self._ok(self.lib.cudaStreamCreate(ctypes.byref(s)), "cudaStreamCreate")
        return int(s.value or 0)

    def destroy_stream(self, s: int) -> None:
        self.lib.cudaStreamDestroy(ctypes.c_void_p(s))

    def h2d(self, dst: int, arr: np.ndarray, stream: int) -> None:
        self._ok(self.lib.cudaMemcpyAsync(dst, arr.ctypes.data, arr.nbytes, _H2D, stream), "cudaMemcpyAsync H2D")

    def d2h(self, arr: np.ndarray, src: int, stream: int) -> None:
        self._ok(self.lib.cudaMemcpyAsync(arr.ctypes.data, src, arr.nbytes, _D2H, stream), "cudaMemcpyAsync D2H")

    def sync(self, stream: int) -> None:
        self._ok(self.lib.cudaStreamSynchronize(stream), "cudaStreamSynchronize")
