#!/usr/bin/env python3
"""Keeps CI's persistent cargo target directory within the disk.

Every CI run builds the changed test and bench executables again under new
names (debug/deps/<name>-<hash>), and the old ones stay: about 20 GB after
a day of runs, which once filled the disk mid-run. This removes, in
debug/deps, each test or bench executable (and its dep-info) that a newer
one of the same kind (cargo's fingerprint: a binary, a test of a library,
an integration test, ...) built from the same source file replaced, and in
debug/incremental all
but the newest KEEP_INCREMENTAL directories of each crate (a crate has one
per build configuration: check, test, library).

Usage: prune-target.py <target dir>   (prints what it freed; a failure is
printed and ends it with status 0: pruning never fails CI)
"""

import collections
import os
import sys

KEEP_INCREMENTAL = 3


def size_of(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


def remove(path):
    freed = size_of(path)
    if os.path.isdir(path):
        for root, dirs, files in os.walk(path, topdown=False):
            for f in files:
                os.remove(os.path.join(root, f))
            for d in dirs:
                os.rmdir(os.path.join(root, d))
        os.rmdir(path)
    else:
        os.remove(path)
    return freed


def kind_of(fingerprints, unit_hash):
    """What cargo built as unit `unit_hash` (the names in its fingerprint
    directory, e.g. `bin-okd-install` or `test-bin-okd-install`), or ''."""
    try:
        for d in os.listdir(fingerprints):
            if d.endswith("-" + unit_hash):
                names = os.listdir(os.path.join(fingerprints, d))
                return ",".join(
                    sorted(
                        n
                        for n in names
                        if not n.endswith(".json")
                        and not n.startswith("dep-")
                        and n != "invoked.timestamp"
                    )
                )
    except OSError:
        pass
    return ""


def superseded_executables(deps):
    """(mtime, path) of each executable with a newer one of the same name,
    kind and crate root (the first source its dep-info names)."""
    fingerprints = os.path.join(os.path.dirname(deps), ".fingerprint")
    groups = collections.defaultdict(list)
    for name in os.listdir(deps):
        path = os.path.join(deps, name)
        # Executables have no extension (.rlib, .rmeta, .so, .d have).
        if "." in name or not os.path.isfile(path) or not os.access(path, os.X_OK):
            continue
        try:
            with open(path + ".d", encoding="utf-8", errors="replace") as f:
                first = f.readline()
        except OSError:
            continue
        sources = first.split(": ", 1)[1].split() if ": " in first else []
        stem, _, unit_hash = name.rpartition("-")
        key = (stem, kind_of(fingerprints, unit_hash), sources[0] if sources else "")
        groups[key].append((os.path.getmtime(path), path))
    for items in groups.values():
        items.sort(reverse=True)
        yield from items[1:]


def old_incremental(incremental):
    groups = collections.defaultdict(list)
    for name in os.listdir(incremental):
        path = os.path.join(incremental, name)
        if os.path.isdir(path):
            groups[name.rsplit("-", 1)[0]].append((os.path.getmtime(path), path))
    for items in groups.values():
        items.sort(reverse=True)
        yield from items[KEEP_INCREMENTAL:]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: prune-target.py <target dir>")
    debug = os.path.join(sys.argv[1], "debug")
    freed = files = 0
    deps = os.path.join(debug, "deps")
    if os.path.isdir(deps):
        for _, path in list(superseded_executables(deps)):
            freed += remove(path)
            files += 1
            if os.path.exists(path + ".d"):
                freed += remove(path + ".d")
    incremental = os.path.join(debug, "incremental")
    if os.path.isdir(incremental):
        for _, path in list(old_incremental(incremental)):
            freed += remove(path)
            files += 1
    print(f"prune-target: {files} superseded executables and incremental directories, {freed / 2**30:.1f} GiB freed")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - pruning is best effort
        print(f"prune-target: stopped: {e}")
