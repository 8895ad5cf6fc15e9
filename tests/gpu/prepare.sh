#!/bin/sh
# tests/gpu/prepare.sh -- gets what tests/gpu/run.sh needs on a GPU machine
# that has CUDA, a C compiler and CMake but no network and none of the
# project's Debian packages, into .gpu/ of the source tree (which git
# ignores through .git/info/exclude):
#
#   .gpu/gguf-tools-VERSION.tar.gz   the distribution (`make dist`): a
#                                    configure script, so no Autotools there
#   .gpu/debs/*.deb                  zlib, xxHash, PCRE2 and OpenSSL's
#                                    libcrypto with their headers,
#                                    pkg-config and make, from Debian
#
# Run it from a configured build directory of the project, on a machine
# with network (apt-get download needs no root).  Then carry .gpu to the
# GPU machine with the tree and run tests/gpu/run.sh there.  A llama.cpp
# to compare with is not fetched here: see run.sh's LLAMA_BENCH and
# LLAMA_SRC.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$src/.gpu/debs"
grep -qx '/.gpu/' "$src/.git/info/exclude" 2>/dev/null || echo '/.gpu/' >> "$src/.git/info/exclude"
rm -f "$src"/.gpu/gguf-tools-*.tar.gz
make dist > /dev/null
mv gguf-tools-*.tar.gz "$src/.gpu/"
cd "$src/.gpu/debs"
rm -f ./*.deb
apt-get download zlib1g zlib1g-dev libxxhash0 libxxhash-dev libpcre2-8-0 libpcre2-dev \
    libpcre2-16-0 libpcre2-32-0 libpcre2-posix3 libssl3 libssl-dev pkgconf pkgconf-bin libpkgconf3 \
    make > /dev/null
ls -l "$src/.gpu" "$src/.gpu/debs"
du -sh "$src/.gpu"
