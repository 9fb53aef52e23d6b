#!/usr/bin/python3
"""Write every numpy-generated test fixture.

usage: gen_fixtures.py OUTDIR STAMP

Runs each scripts/fixtures/gen_*.py as `gen_X.py OUTDIR/X`, skipping one
whose output folder is newer than the script (so rebuilds stay fast), then
touches STAMP. Exits non-zero if any generator fails.
"""
import os
import subprocess
import sys


def main():
    outdir, stamp = sys.argv[1], sys.argv[2]
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
    os.makedirs(outdir, exist_ok=True)
    failed = 0
    for name in sorted(os.listdir(here)):
        if not (name.startswith("gen_") and name.endswith(".py")):
            continue
        script = os.path.join(here, name)
        dest = os.path.join(outdir, name[4:-3])
        done = os.path.join(dest, ".done")
        if os.path.exists(done) and os.path.getmtime(done) >= os.path.getmtime(script):
            continue
        os.makedirs(dest, exist_ok=True)
        rc = subprocess.call(["/usr/bin/python3", script, dest])
        if rc != 0:
            print(f"gen_fixtures: {name} failed with status {rc}", file=sys.stderr)
            failed += 1
            continue
        with open(done, "w"):
            pass
    with open(stamp, "w"):
        pass
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
