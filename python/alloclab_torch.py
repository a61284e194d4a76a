"""An alloclab strategy as PyTorch's CUDA allocator, in place of PyTorch's own cache.

    import alloclab_torch
    alloclab_torch.use("best-fit")      # before the first CUDA tensor

Every CUDA tensor's memory then comes from the strategy (`alloclab strategies` lists them), one
cache per device over cudaMalloc/cudaFree, through liballoclab_torch.so and
torch.cuda.memory.CUDAPluggableAllocator. The library is found in ALLOCLAB_TORCH_LIBRARY, beside
this file, in the installed ../../../lib, or in a source checkout's build/lib. With a report
folder (`report_dir`, or ALLOCLAB_LIVE_REPORT_DIR, which `alloclab run` sets) each device used
writes its counters there at exit, as `alloclab run` reads them. The program's run markers
(alloclab_markers, shipped beside this file) are the strategy's runs.
"""
import ctypes
import os

import alloclab_markers

__all__ = ["use", "library_path"]

_LIBRARY = "liballoclab_torch.so"
# The libraries use() opened, by path: one ctypes handle each, so that their marker functions
# are registered with alloclab_markers once however often use() is called.
_opened = {}


def library_path():
    """The path of liballoclab_torch.so; RuntimeError when it is nowhere to be found."""
    env = os.environ.get("ALLOCLAB_TORCH_LIBRARY")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [
        os.path.join(here, _LIBRARY),
        os.path.join(here, "..", "..", "..", "lib", _LIBRARY),  # share/alloclab/python
        os.path.join(here, "..", "build", "lib", _LIBRARY),  # a source checkout
    ]
    for path in candidates:
        if os.path.exists(path):
            return os.path.normpath(path)
    raise RuntimeError(
        "alloclab_torch: %s not found (looked beside %s, in the installed lib/ and build/lib; "
        "set ALLOCLAB_TORCH_LIBRARY, or build alloclab with the CUDA toolkit)" % (_LIBRARY, here))


def _open(path):
    library = _opened.get(path)
    if library is None:
        library = ctypes.CDLL(path)
        library.alloclab_torch_configure.argtypes = [
            ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
        library.alloclab_torch_configure.restype = ctypes.c_int
        library.alloclab_torch_run_begin.argtypes = [ctypes.c_char_p]
        library.alloclab_torch_run_begin.restype = None
        library.alloclab_torch_run_end.argtypes = []
        library.alloclab_torch_run_end.restype = None
        _opened[path] = library
    return library


def use(spec, report_dir=None, marked_runs=None):
    """Makes the strategy `spec` PyTorch's CUDA allocator for the rest of the process.

    Call it before the first CUDA tensor: PyTorch keeps the allocator it first used. The run
    markers of alloclab_markers (`with alloclab_markers.run("step"): ...`) are the strategy's
    runs from then on. `marked_runs`: True when runs come from the markers only (the program
    before its first marker is no run), False when that stretch is a run too; None: as
    ALLOCLAB_LIVE_MARKERS says (1, as `alloclab run --markers` sets it: True). `report_dir`
    (None: ALLOCLAB_LIVE_REPORT_DIR's; no folder, no reports): where each device writes its
    counters at exit. Raises RuntimeError when PyTorch or CUDA is not available or an allocator
    was already used, and ValueError for a spec alloclab refuses. Returns the
    CUDAPluggableAllocator.
    """
    try:
        import torch
    except ImportError as e:
        raise RuntimeError("alloclab_torch: PyTorch is not installed (%s)" % e) from e
    if not torch.cuda.is_available():
        raise RuntimeError(
            "alloclab_torch: CUDA is not available to PyTorch (torch.cuda.is_available() is "
            "False: a CPU-only build, or no CUDA device or driver)")
    path = library_path()
    library = _open(path)
    if report_dir is None:
        report_dir = os.environ.get("ALLOCLAB_LIVE_REPORT_DIR")
    if marked_runs is None:
        marked_runs = os.environ.get("ALLOCLAB_LIVE_MARKERS") == "1"
    error = ctypes.create_string_buffer(1024)
    if library.alloclab_torch_configure(
            spec.encode("utf-8"), report_dir.encode("utf-8") if report_dir else None,
            1 if marked_runs else 0, error, len(error)) != 0:
        raise ValueError("alloclab_torch: %s" % error.value.decode("utf-8", "replace"))
    allocator = torch.cuda.memory.CUDAPluggableAllocator(
        path, "alloclab_torch_malloc", "alloclab_torch_free")
    try:
        torch.cuda.memory.change_current_allocator(allocator)
    except RuntimeError as e:
        raise RuntimeError(
            "alloclab_torch: PyTorch's CUDA allocator was already used in this process: call "
            "use() before the first CUDA tensor (%s)" % e) from e
    alloclab_markers.register_runs(library.alloclab_torch_run_begin,
                                   library.alloclab_torch_run_end)
    return allocator
