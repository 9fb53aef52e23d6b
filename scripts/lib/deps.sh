#!/usr/bin/env bash
# Install the Debian packages of one purpose that are missing; nothing else.
# usage: scripts/lib/deps.sh run|test [extra-package...]
#   run   building and mounting (scripts/run, scripts/fuzz)
#   test  that, and what the tests judge and serve mounts with (scripts/test)
# Side effects: runs apt-get update/install (as root, or through sudo).
# Exit status: 0 all there; 1 apt-get failed; 2 usage.
set -euo pipefail

# Building and mounting. gcc only recommends the C library's headers, and
# recommends are not installed; meson brings python3 and ninja-build.
run_packages=(
  gcc libc6-dev meson ninja-build pkg-config
  libfuse3-dev fuse3 zlib1g-dev liblz4-dev
)
# ISA-L is optional (-Disal=auto), and Debian builds it for these only
case $(dpkg --print-architecture) in
  amd64 | arm64) run_packages+=(libisal-dev) ;;
esac

# Only the tests use these (the README's dependency table says which test)
test_packages=(
  check python3 python3-numpy python3-lz4
  attr man-db groff-base valgrind
  build-essential debhelper dpkg-dev lintian fakeroot
  samba smbclient python3-smbc nginx curl python3-fsspec python3-aiohttp python3-requests
  rclone
  python3-zarr python3-xarray python3-dask python3-distributed gdal-bin
  python3-gdal teem-apps
  python3-vtk9 nodejs
  nfs-ganesha nfs-ganesha-vfs libnfs-utils iproute2
)

purpose=${1:-}
shift || true
case $purpose in
  run) packages=("${run_packages[@]}") ;;
  test)
    packages=("${run_packages[@]}" "${test_packages[@]}")
    # npm (the mount tests install zarrita.js with it): Debian's, unless the
    # installed nodejs brings its own (NodeSource's does, and conflicts with it)
    command -v npm >/dev/null 2>&1 || packages+=(npm)
    ;;
  *)
    echo "usage: scripts/lib/deps.sh run|test [extra-package...]" >&2
    exit 2
    ;;
esac
packages+=("$@")

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "Installing missing packages: ${missing[*]}" >&2
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq || exit 1
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 || exit 1
