#!/usr/bin/env bash
# Install the Debian packages arrayfs needs that are missing; nothing else.
# usage: scripts/lib/deps.sh [extra-package...]
# Side effects: runs apt-get update/install (as root, or through sudo).
set -euo pipefail

packages=(
  gcc meson ninja-build pkg-config
  libfuse3-dev fuse3 zlib1g-dev liblz4-dev libisal-dev check
  python3 python3-numpy python3-lz4
  attr man-db groff-base valgrind
  build-essential debhelper dpkg-dev lintian fakeroot
  samba smbclient python3-smbc nginx curl python3-fsspec python3-aiohttp python3-requests
  python3-zarr python3-dask python3-distributed gdal-bin python3-gdal teem-apps
  python3-vtk9 nodejs
  nfs-ganesha nfs-ganesha-vfs libnfs-utils iproute2
  "$@"
)
# npm (the mount tests install zarrita.js with it): Debian's, unless the
# installed nodejs brings its own (NodeSource's does, and conflicts with it)
command -v npm >/dev/null 2>&1 || packages+=(npm)

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
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
