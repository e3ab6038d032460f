#!/usr/bin/env bash
# Rebuild redisbloom.so from redisbloom-2.4.23-src.tar.gz with gcc alone (Debian: build-essential).
# usage: test/redisbloom/build.sh [OUT.so]   (default: overwrite the redisbloom.so beside this script)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/redisbloom.so}
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
tar xzf "$here/redisbloom-2.4.23-src.tar.gz" -C "$src"
# src/common.h includes a debug header from a submodule that a release build leaves empty.
mkdir -p "$src/stub/readies/cetara/diag" && : > "$src/stub/readies/cetara/diag/gdb.h"
cd "$src"
gcc -std=gnu99 -fPIC -shared -O2 -pthread -fno-strict-aliasing -fcommon -w \
  -D_GNU_SOURCE -DREDIS_MODULE_TARGET -DREDISMODULE_EXPERIMENTAL_API \
  '-DREDISBLOOM_GIT_SHA="62e312861005235d2cf46c9b0e7f3793ef0a495d"' \
  -I. -Isrc -Ideps -Ideps/murmur2 -Ideps/t-digest-c/src -Istub \
  deps/bloom/bloom.c deps/murmur2/MurmurHash2.c deps/rmutil/util.c src/rebloom.c src/sb.c src/cf.c \
  src/rm_topk.c src/rm_tdigest.c src/topk.c src/rm_cms.c src/cms.c deps/t-digest-c/src/tdigest.c \
  -o "$out" -lm -lc
echo "built $out ($(stat -c %s "$out") bytes)"
