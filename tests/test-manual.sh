#!/bin/sh
# test-manual.sh -- libgguf(3) documents every function gguf/gguf.h and quant/quant.h declare.
#
# Each function declared with GGUF_API must appear in the SYNOPSIS of
# man/libgguf.3 with its name in bold (.BI "... name(" or .B ... name(),
# and be described in the body as well.  Exits 0 pass, 1 fail, 99 hard error.

top_srcdir=${top_srcdir:-.}
headers="$top_srcdir/gguf/gguf.h $top_srcdir/quant/quant.h"
page=$top_srcdir/man/libgguf.3
for f in $headers "$page"; do
    [ -r "$f" ] || { echo "hard error: cannot read $f" >&2; exit 99; }
done

names=$(sed -n 's/^GGUF_API[^(]*[ *]\(gguf_[A-Za-z0-9_]*\)(.*/\1/p' $headers | sort -u)
n=$(echo "$names" | grep -c .)
[ "$n" -ge 10 ] || { echo "hard error: only $n declarations found in $headers" >&2; exit 99; }

# The page with roff escapes for '-' undone; the SYNOPSIS and the rest.
sed 's/\\-/-/g' "$page" > "${TMPDIR:-/tmp}/libgguf3.$$" || exit 99
trap 'rm -f "${TMPDIR:-/tmp}/libgguf3.$$"' EXIT
text=${TMPDIR:-/tmp}/libgguf3.$$
synopsis=$(sed -n '/^\.SH SYNOPSIS/,/^\.SH DESCRIPTION/p' "$text")
body=$(sed -n '/^\.SH DESCRIPTION/,$p' "$text")

fail=0
for name in $names; do
    if ! echo "$synopsis" | grep -q "[ *]$name("; then
        echo "FAIL: $name is not in the SYNOPSIS of libgguf(3)" >&2; fail=1
    fi
    if ! echo "$body" | grep -q "\\b$name\\b"; then
        echo "FAIL: $name is not described in libgguf(3)" >&2; fail=1
    fi
done
[ "$fail" -eq 0 ] && echo "PASS: libgguf(3) covers all $n functions of gguf.h and quant.h"
exit "$fail"
