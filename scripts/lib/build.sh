#!/usr/bin/env bash
# Configure (once) and build arrayfs into BUILDDIR (default: build).
# usage: scripts/lib/build.sh [BUILDDIR] [meson setup options...]
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-build}
shift || true
if [ ! -f "$dir/build.ninja" ]; then
  meson setup "$dir" "$@" >&2
fi
meson compile -C "$dir" >&2
