#!/usr/bin/python3
"""Count test cases in a meson testlog.json and print `N passed, M failed`.

usage: summarize.py TESTLOG.json
Check programs and python unittest files report their own case counts;
any other test counts as one case. A test that failed without reporting a
failed case (a crash, a timeout) counts one failure more. Exit status 1 if
anything failed or nothing ran.
"""
import json
import re
import sys

CHECK = re.compile(r"^\d+%: Checks: (\d+), Failures: (\d+), Errors: (\d+)", re.M)
UNITTEST_RAN = re.compile(r"^Ran (\d+) tests?", re.M)
UNITTEST_FAILED = re.compile(r"^FAILED \(([^)]*)\)", re.M)
UNITTEST_SKIPPED = re.compile(r"skipped=(\d+)")


def count(entry):
    out = (entry.get("stdout") or "") + "\n" + (entry.get("stderr") or "")
    ok = entry.get("result") in ("OK", "EXPECTEDFAIL")
    passed = failed = skipped = 0
    found = False
    for m in CHECK.finditer(out):
        found = True
        total, fails, errs = map(int, m.groups())
        failed += fails + errs
        passed += total - fails - errs
    for m in UNITTEST_RAN.finditer(out):
        found = True
        passed += int(m.group(1))
    for m in UNITTEST_FAILED.finditer(out):
        bad = sum(int(n) for k, n in re.findall(r"(failures|errors|unexpected successes)=(\d+)", m.group(1)))
        passed -= bad
        failed += bad
    for m in UNITTEST_SKIPPED.finditer(out):
        n = int(m.group(1))
        passed -= n
        skipped += n
    if not found:
        if entry.get("result") == "SKIP":
            skipped += 1
        elif ok:
            passed += 1
        else:
            failed += 1
    elif not ok and failed == 0:
        failed += 1
    return passed, failed, skipped


def main():
    passed = failed = skipped = 0
    with open(sys.argv[1]) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            entry = json.loads(line)
            p, fl, s = count(entry)
            if fl:
                print(f"FAILED: {entry.get('name')} ({entry.get('result')})")
            passed, failed, skipped = passed + p, failed + fl, skipped + s
    tail = f", {skipped} skipped" if skipped else ""
    print(f"{passed} passed, {failed} failed{tail}")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
