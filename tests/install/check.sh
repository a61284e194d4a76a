#!/bin/sh
# `cmake --install` into a fresh prefix, then the installed alloclab records a program and reads
# the trace back: it finds the tracer in ../lib, and libraries outside the tree (the CUDA
# runtime) through its run path.
#   check.sh BUILD_DIR RECORD     RECORD=0 in sanitizer builds, whose tracer cannot be preloaded
set -eu
build=$1
record=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
for file in bin/alloclab lib/liballoclab_preload.so lib/liballoclab_live.so lib/alloclab-writer \
    include/alloclab/markers.h \
    include/alloclab/strategy_plugin.h share/alloclab/python/alloclab_markers.py \
    share/alloclab/python/alloclab_torch.py; do
  test -e "$prefix/$file" || { echo "not installed: $file"; exit 1; }
done
# Built with the CUDA toolkit: `run --cuda`'s library and the PyTorch allocator.
for file in liballoclab_live_cuda.so liballoclab_torch.so; do
  if [ -e "$build/lib/$file" ] && [ ! -e "$prefix/lib/$file" ]; then
    echo "not installed: lib/$file"
    exit 1
  fi
done
"$prefix/bin/alloclab" --version
if [ "$record" = 1 ]; then
  "$prefix/bin/alloclab" record -o "$prefix/t.alt" -- /bin/true
  "$prefix/bin/alloclab" info "$prefix/t.alt" >/dev/null
fi
echo "install check passed"
