#!/usr/bin/env python3
# Parses KTAP on stdin with the kernel's own parser and prints what it
# found as one JSON object: the counts of the main test, its status, its
# errors and its tests' names and statuses. The parser's human output goes
# to stderr.
#
# usage: python3 -c "$(cat kunit_counts.py)" DIR (the directory of kunit_parser.py)
import json
import sys

sys.path.insert(0, sys.argv[1])
import kunit_parser  # noqa: E402
import kunit_printer  # noqa: E402

kunit_parser.stdout = kunit_printer.Printer(sys.stderr)
test = kunit_parser.parse_run_tests(sys.stdin.readlines())
c = test.counts
print(json.dumps({
    "status": test.status.name,
    "passed": c.passed, "failed": c.failed, "crashed": c.crashed,
    "skipped": c.skipped, "errors": c.errors,
    "tests": [{"name": t.name, "status": t.status.name} for t in test.subtests],
}))
