#!/usr/bin/python3
"""Exits 0 when two torch.save files load to equal objects: the same nested dict/list/tuple
structure, equal scalars, and tensors of equal dtype, shape and values (NaN equal to NaN).
tools/dev/goldens.sh --check uses it for the legacy-format files, whose bytes hold storage
addresses and so change on every run.

  /usr/bin/python3 tests/oracles/torch_equal.py A.pt B.pt
"""
import sys

import torch


def equal(a, b, path="root"):
    if type(a) is not type(b):
        return "%s: type %s vs %s" % (path, type(a).__name__, type(b).__name__)
    if isinstance(a, torch.Tensor):
        if a.dtype != b.dtype or a.shape != b.shape:
            return "%s: %s%s vs %s%s" % (path, a.dtype, tuple(a.shape), b.dtype, tuple(b.shape))
        if torch.equal(a, b):
            return None
        if a.is_floating_point() and torch.equal(a.isnan(), b.isnan()) and torch.equal(a[~a.isnan()], b[~b.isnan()]):
            return None
        return "%s: values differ" % path
    if isinstance(a, dict):
        if list(a) != list(b):
            return "%s: keys differ" % path
        for k in a:
            err = equal(a[k], b[k], "%s/%s" % (path, k))
            if err:
                return err
        return None
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return "%s: length %d vs %d" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            err = equal(x, y, "%s/%d" % (path, i))
            if err:
                return err
        return None
    if hasattr(a, "__dict__") and not isinstance(a, type):
        return equal(vars(a), vars(b), path)
    return None if a == b else "%s: %r vs %r" % (path, a, b)


def main():
    a, b = (torch.load(p, map_location="cpu") for p in sys.argv[1:3])
    err = equal(a, b)
    if err:
        print("torch_equal: %s" % err)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
