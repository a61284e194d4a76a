"""Run markers for Python programs traced by `alloclab record` (no build step, ctypes only).

    import alloclab_markers
    with alloclab_markers.run("forward"):
        model(batch)
    alloclab_markers.mark("epoch 1")

Without the tracer (a program run normally) every call is a cheap no-op. Labels are truncated
to 63 bytes of UTF-8, before a character, not inside one.

The tracer's functions are found in the process's global scope (`alloclab record`, `alloclab
run` preload them). A library opened in a local scope, as PyTorch opens its pluggable allocator,
is not found there: `register_runs` passes the run markers to it too (alloclab_torch.use()
registers liballoclab_torch.so's, so that its strategy sees the program's runs).
"""
import contextlib
import ctypes

__all__ = ["run", "run_begin", "run_end", "mark", "traced", "register_runs"]


def _lookup(name, argtypes):
    try:
        fn = getattr(ctypes.CDLL(None), name)
    except (AttributeError, OSError):
        return None
    fn.argtypes = argtypes
    fn.restype = None
    return fn


_run_begin = _lookup("alloclab_preload_run_begin", [ctypes.c_char_p])
_run_end = _lookup("alloclab_preload_run_end", [])
_mark = _lookup("alloclab_preload_mark", [ctypes.c_char_p])
# (run_begin, run_end) pairs that register_runs added, in the order they came.
_registered = []


def traced():
    """True when this process runs under `alloclab record`."""
    return _run_begin is not None


def _encode(label):
    return label.encode("utf-8") if isinstance(label, str) else bytes(label)


def register_runs(run_begin, run_end):
    """Passes every later run marker to `run_begin(label)` (the label as UTF-8 bytes) and
    `run_end()` as well as to the tracer: e.g. a library's `void begin(const char*)` and
    `void end(void)` through ctypes. Registering the same pair again does nothing."""
    if (run_begin, run_end) not in _registered:
        _registered.append((run_begin, run_end))


def run_begin(label=""):
    if _run_begin is None and not _registered:
        return
    encoded = _encode(label)
    if _run_begin is not None:
        _run_begin(encoded)
    for begin, _ in _registered:
        begin(encoded)


def run_end():
    if _run_end is not None:
        _run_end()
    for _, end in _registered:
        end()


def mark(label):
    if _mark is not None:
        _mark(_encode(label))


@contextlib.contextmanager
def run(label=""):
    """Marks the block as one run (e.g. one forward pass)."""
    run_begin(label)
    try:
        yield
    finally:
        run_end()
