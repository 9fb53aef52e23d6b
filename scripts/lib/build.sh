#!/usr/bin/env bash
# Configure (once) and build arrayfs into BUILDDIR (default: build).
# usage: scripts/lib/build.sh [--no-tests] [BUILDDIR] [meson setup options...]
#   --no-tests  build what mounting needs only (scripts/run): a new BUILDDIR
#               is set up without the tests, which need packages that
#               scripts/run does not install, and in any BUILDDIR only the
#               daemon and the tools are built
# Without --no-tests, a BUILDDIR set up without the tests gets them turned
# on, so scripts/run and scripts/test share one in either order.
set -euo pipefail
cd "$(dirname "$0")/../.."
with_tests=true
if [ "${1:-}" = --no-tests ]; then
  with_tests=false
  shift
fi
dir=${1:-build}
shift || true

tests_option() {  # tests_option DIR: the value of -Dtests in DIR, true or false
  meson introspect --buildoptions "$1" | python3 -c '
import json, sys
print(str(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "tests")).lower())'
}

if [ ! -f "$dir/build.ninja" ]; then
  setup=()
  [ $with_tests = false ] && setup=(-Dtests=false)
  meson setup "$dir" "${setup[@]}" "$@" >&2
elif [ $with_tests = true ] && [ "$(tests_option "$dir")" != true ]; then
  meson configure "$dir" -Dtests=true >&2
fi

if [ $with_tests = true ]; then
  meson compile -C "$dir" >&2
else
  # the daemon's name is also the library's
  meson compile -C "$dir" arrayfs:executable arrayinfo arrayconv >&2
fi
