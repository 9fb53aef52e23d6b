#!/usr/bin/python3
"""Count test cases in a meson testlog.json and print `N passed, M failed`
(with `, K skipped` when some were).

usage: summarize.py TESTLOG.json [ALLOWED_SKIPS]
Check programs and python unittest files report their own case counts;
any other test counts as one case. A test that failed without reporting a
failed case (a crash, a timeout) counts one failure more, and so does a
program that ran no case at all.

A skip is a failure unless ALLOWED_SKIPS (default tests/allowed_skips.txt)
lists it, one `TEST-ID  REASON` a line (`#` starts a comment): TEST-ID is
the meson test's name for a skipped test (exit status 77), or NAME:CASE for
a skipped unittest case, CASE as unittest prints it without `__main__.`
(e.g. `cli:ReadaheadTest.test_default_window_is_512_kib`). Check has no skip.
Each unexpected skip is printed as `UNEXPECTED SKIP: TEST-ID (reason)`.
Exit status 1 if anything failed or nothing ran.
"""
import json
import os
import re
import sys

CHECK = re.compile(r"^\d+%: Checks: (\d+), Failures: (\d+), Errors: (\d+)", re.M)
UNITTEST_RAN = re.compile(r"^Ran (\d+) tests?", re.M)
UNITTEST_FAILED = re.compile(r"^FAILED \(([^)]*)\)", re.M)
UNITTEST_SKIPPED = re.compile(r"^(?:OK|FAILED) \(.*skipped=(\d+)", re.M)
# verbosity 2: "test_x (__main__.Class.test_x) ... skipped 'why'"; a
# docstring or the test's own output may come between the name and the word
CASE_LINE = re.compile(r"^(\w+) \(([\w.]+)\)")
SKIP_WORD = re.compile(r"(?:^|\.\.\. )skipped (['\"])(.*)\1$")
DEFAULT_ALLOWED = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                               "..", "..", "tests", "allowed_skips.txt")


def load_allowed(path):
    """{test-id: reason} from PATH; a line without a reason is an error."""
    allowed, errors = {}, []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split(None, 1)
            if len(parts) < 2:
                errors.append("%s:%d: %s has no reason" % (path, n, parts[0]))
                continue
            allowed[parts[0]] = parts[1]
    return allowed, errors


def case_id(name, paren):
    """The unittest case id as printed, without the __main__ module."""
    if paren.startswith("__main__."):
        paren = paren[len("__main__."):]
    return paren if paren.split(".")[-1] == name else paren + "." + name


def skipped_cases(out):
    """[(case id, reason)] of the unittest cases OUT says were skipped."""
    found, current = [], None
    for line in out.splitlines():
        m = CASE_LINE.match(line)
        if m:
            current = case_id(m.group(1), m.group(2))
        s = SKIP_WORD.search(line)
        if s:
            found.append((current or "?", s.group(2)))
            current = None
    return found


def count(entry, test):
    """(passed, failed, skips, note) of one testlog entry; skips: [(id,
    reason)]; note: why it failed when meson's result does not say."""
    out = (entry.get("stdout") or "") + "\n" + (entry.get("stderr") or "")
    ok = entry.get("result") in ("OK", "EXPECTEDFAIL")
    passed = failed = 0
    found, note = False, ""
    for m in CHECK.finditer(out):
        found = True
        total, fails, errs = map(int, m.groups())
        failed += fails + errs
        passed += total - fails - errs
        if total == 0:
            failed, note = failed + 1, ", ran no case"
    for m in UNITTEST_RAN.finditer(out):
        found = True
        passed += int(m.group(1))
        if int(m.group(1)) == 0:
            failed, note = failed + 1, ", ran no case"
    for m in UNITTEST_FAILED.finditer(out):
        bad = sum(int(n) for k, n in re.findall(r"(failures|errors|unexpected successes)=(\d+)", m.group(1)))
        passed -= bad
        failed += bad
    said = sum(int(m.group(1)) for m in UNITTEST_SKIPPED.finditer(out))
    skips = [(test + ":" + cid, why) for cid, why in skipped_cases(out)]
    skips += [(test + ":?", "a skip unittest counted but did not name")] * (said - len(skips))
    # a skip in setUpClass/setUpModule is not among the tests "Ran" counts
    passed -= sum(1 for sid, _ in skips if not re.search(r"\bsetUp(Class|Module)$", sid))
    if not found:
        if entry.get("result") == "SKIP":
            skips.append((test, "the test exited with status 77"))
        elif ok:
            passed += 1
        else:
            failed += 1
    elif not ok and failed == 0:
        failed += 1
    return passed, failed, skips, note


def main():
    allowed, errors = load_allowed(sys.argv[2] if len(sys.argv) > 2 else DEFAULT_ALLOWED)
    for e in errors:
        print("ALLOWED SKIPS: " + e)
    passed, failed, skipped = 0, len(errors), 0
    with open(sys.argv[1]) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            entry = json.loads(line)
            test = entry.get("name", "?").split(" / ")[-1]
            p, fl, skips, note = count(entry, test)
            if fl:
                print(f"FAILED: {entry.get('name')} ({entry.get('result')}{note})")
            for sid, why in skips:
                if sid in allowed:
                    skipped += 1
                else:
                    print(f"UNEXPECTED SKIP: {sid} ({why}); not in tests/allowed_skips.txt")
                    fl += 1
            passed, failed = passed + p, failed + fl
    tail = f", {skipped} skipped" if skipped else ""
    print(f"{passed} passed, {failed} failed{tail}")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
