#!/bin/sh
# test-symbols.sh -- libgguf's dynamic symbol table.
#
# The shared library must export only gguf_* names, every function that
# gguf/gguf.h and quant/quant.h declare, and none of the gguf_* names libggml-base exports
# (tests/data/libggml-gguf-symbols.txt), so that both libraries can be loaded
# into one process.  Exits 0 pass, 1 fail, 77 skip (no shared library built,
# no nm), 99 hard error.

top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}

lib=$top_builddir/gguf/.libs/libgguf.so
headers="$top_srcdir/gguf/gguf.h $top_srcdir/quant/quant.h"
ggml_list=$top_srcdir/tests/data/libggml-gguf-symbols.txt

if [ ! -f "$lib" ]; then
    echo "SKIP: no shared library at $lib (configured with --disable-shared?)" >&2
    exit 77
fi
if ! command -v nm >/dev/null 2>&1; then
    echo "SKIP: nm not found (install binutils)" >&2
    exit 77
fi
for f in $headers "$ggml_list"; do
    [ -r "$f" ] || { echo "hard error: cannot read $f" >&2; exit 99; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gguf-symbols.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT

# "ADDRESS TYPE NAME" for every defined dynamic symbol.  Type A marks the
# absolute symbols that name symbol-version nodes, not code or data.
if ! nm -D --defined-only "$lib" > "$tmp/nm.out"; then
    echo "hard error: nm -D $lib failed" >&2
    exit 99
fi
awk 'NF >= 3 && $2 != "A" { print $3 }' "$tmp/nm.out" | sed 's/@.*//' | sort -u > "$tmp/exported"

# Function names declared in the public header (the name follows GGUF_API on
# the declaration's first line).
sed -n 's/^GGUF_API[^(]*[ *]\(gguf_[A-Za-z0-9_]*\)(.*/\1/p' $headers | sort -u > "$tmp/declared"

fail=0
n_exported=$(wc -l < "$tmp/exported")
n_declared=$(wc -l < "$tmp/declared")
echo "$lib: $n_exported exported symbols; the public headers declare $n_declared functions"

if [ "$n_declared" -lt 10 ]; then
    echo "hard error: found only $n_declared declarations in $headers" >&2
    exit 99
fi

bad=$(grep -v '^gguf_' "$tmp/exported")
if [ -n "$bad" ]; then
    echo "FAIL: exported symbols without the gguf_ prefix:" >&2
    echo "$bad" | sed 's/^/  /' >&2
    fail=1
fi

clash=$(grep -v '^[[:space:]]*$' "$ggml_list" | sort -u | comm -12 - "$tmp/exported")
if [ -n "$clash" ]; then
    echo "FAIL: exported symbols that libggml also exports:" >&2
    echo "$clash" | sed 's/^/  /' >&2
    fail=1
fi

# The header must not even declare one of them (a static build would clash).
clash=$(grep -v '^[[:space:]]*$' "$ggml_list" | sort -u | comm -12 - "$tmp/declared")
if [ -n "$clash" ]; then
    echo "FAIL: the public headers declare names that libggml exports:" >&2
    echo "$clash" | sed 's/^/  /' >&2
    fail=1
fi

missing=$(comm -23 "$tmp/declared" "$tmp/exported")
if [ -n "$missing" ]; then
    echo "FAIL: declared in the public headers but not exported by $lib:" >&2
    echo "$missing" | sed 's/^/  /' >&2
    fail=1
fi

[ "$fail" -eq 0 ] && echo "PASS: only gguf_* names exported, none shared with libggml, all declarations present"
exit "$fail"
