"""Run markers for Python programs traced by `alloclab record` (no build step, ctypes only).

    import alloclab_markers
    with alloclab_markers.run("forward"):
        model(batch)
    alloclab_markers.mark("epoch 1")

Without the tracer (a program run normally) every call is a cheap no-op. Labels are truncated
to 63 bytes of UTF-8, before a character, not inside one.
"""
import contextlib
import ctypes

__all__ = ["run", "run_begin", "run_end", "mark", "traced"]


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


def traced():
    """True when this process runs under `alloclab record`."""
    return _run_begin is not None


def _encode(label):
    return label.encode("utf-8") if isinstance(label, str) else bytes(label)


def run_begin(label=""):
    if _run_begin is not None:
        _run_begin(_encode(label))


def run_end():
    if _run_end is not None:
        _run_end()


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
