#!/bin/sh
# test-install.sh -- `make install DESTDIR=...` installs a usable package.
#
# Installs the build into a temporary DESTDIR, checks that the tools, the
# shared and static library, the header, the pkg-config file and the man
# pages are there, then compiles a small program against the installed
# header and library with the flags pkg-config gives and runs it.
# Exits 0 pass, 1 fail, 77 skip, 99 hard error.

top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
MAKE=${MAKE:-make}

if ! command -v pkg-config >/dev/null 2>&1; then
    echo "SKIP: pkg-config not found (install pkg-config)" >&2
    exit 77
fi
if [ ! -f "$top_builddir/Makefile" ]; then
    echo "hard error: no Makefile in $top_builddir" >&2
    exit 99
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gguf-install.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root

# This test runs inside `make check`: start the inner make afresh rather
# than inheriting the outer one's job server and flags.
unset MAKEFLAGS MFLAGS MAKELEVEL

# The installation directories and compiler exactly as the Makefile expands
# them (prefix, libdir ... may have been set by configure or on the command
# line of make distcheck).
cat > "$tmp/print.mk" <<'MK'
gg-print-config: ; @:
$(info gg_bindir=$(bindir))
$(info gg_libdir=$(libdir))
$(info gg_includedir=$(includedir))
$(info gg_mandir=$(mandir))
$(info gg_cc=$(CC))
$(info gg_san=$(SANITIZER_CFLAGS))
MK
if ! "$MAKE" -s --no-print-directory -C "$top_builddir" -f Makefile -f "$tmp/print.mk" \
        gg-print-config > "$tmp/config" 2> "$tmp/config.err"; then
    cat "$tmp/config.err" >&2
    echo "hard error: cannot read the installation directories from the Makefile" >&2
    exit 99
fi
value() { sed -n "s/^gg_$1=//p" "$tmp/config" | tail -n 1; }
bindir=$(value bindir); libdir=$(value libdir); includedir=$(value includedir)
mandir=$(value mandir); cc=$(value cc); san=$(value san)
for v in "$bindir" "$libdir" "$includedir" "$mandir" "$cc"; do
    [ -n "$v" ] || { cat "$tmp/config" >&2; echo "hard error: empty setting" >&2; exit 99; }
done

if ! "$MAKE" -C "$top_builddir" install DESTDIR="$root" > "$tmp/install.log" 2>&1; then
    cat "$tmp/install.log" >&2
    echo "FAIL: make install DESTDIR=$root failed" >&2
    exit 1
fi

fail=0
expect() {
    # expect DESCRIPTION PATTERN: at least one file matches the pattern.
    for f in $2; do
        if [ -f "$f" ]; then echo "ok: $1: ${f#"$root"}"; return 0; fi
    done
    echo "FAIL: $1 not installed (no file matches ${2#"$root"})" >&2
    fail=1
}
# Which kinds of library configure enabled (--disable-shared/-static), as
# libtool records them (the first assignment in the script is the setting).
shared=$(sed -n 's/^build_libtool_libs=//p' "$top_builddir/libtool" | head -n 1)
static=$(sed -n 's/^build_old_libs=//p' "$top_builddir/libtool" | head -n 1)
[ "$shared" = yes ] || [ "$static" = yes ] || {
    echo "hard error: cannot tell from $top_builddir/libtool which libraries are built" >&2; exit 99; }

expect "tool gguf-dump"      "$root$bindir/gguf-dump"
expect "tool gguf-requant"   "$root$bindir/gguf-requant"
expect "tool gguf-verify"    "$root$bindir/gguf-verify"
expect "tool gguf-edit"      "$root$bindir/gguf-edit"
expect "tool qwen-run"       "$root$bindir/qwen-run"
if [ "$shared" = yes ]; then
    expect "shared library"  "$root$libdir/libgguf.so.*"
else
    echo "note: configured with --disable-shared: no shared library expected"
fi
if [ "$static" = yes ]; then
    expect "static library"  "$root$libdir/libgguf.a"
else
    echo "note: configured with --disable-static: no static library expected"
fi
expect "header"              "$root$includedir/gguf/gguf.h"
expect "quant header"        "$root$includedir/gguf/quant.h"
expect "pkg-config file"     "$root$libdir/pkgconfig/libgguf.pc"
expect "gguf-dump(1)"        "$root$mandir/man1/gguf-dump.1"
expect "gguf-requant(1)"     "$root$mandir/man1/gguf-requant.1"
expect "gguf-verify(1)"      "$root$mandir/man1/gguf-verify.1"
expect "gguf-edit(1)"        "$root$mandir/man1/gguf-edit.1"
expect "qwen-run(1)"         "$root$mandir/man1/qwen-run.1"
expect "libgguf(3)"          "$root$mandir/man3/libgguf.3"
if [ "$shared" = yes ] && [ ! -e "$root$libdir/libgguf.so" ]; then
    echo "FAIL: no libgguf.so development link in $libdir" >&2; fail=1
fi
if [ -f "$root$bindir/gguf-dump" ] && [ ! -x "$root$bindir/gguf-dump" ]; then
    echo "FAIL: $bindir/gguf-dump is not executable" >&2; fail=1
fi
[ "$fail" -eq 0 ] || { find "$root" -type f -o -type l >&2; exit 1; }

# Compile and link a program with the installed header and library, with
# the flags pkg-config gives for the installed libgguf.pc, rebased into the
# DESTDIR tree by PKG_CONFIG_SYSROOT_DIR.  The system's own .pc directories
# stay in the search path: libgguf.pc requires zlib.pc and libxxhash.pc.
PKG_CONFIG_PATH=$root$libdir/pkgconfig
PKG_CONFIG_SYSROOT_DIR=$root
export PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
# A static-only build links libgguf.a, which needs its private libraries.
pc_opts="--cflags --libs"
[ "$shared" = yes ] || pc_opts="$pc_opts --static"
# shellcheck disable=SC2086 # $pc_opts is a list of words
if ! flags=$(pkg-config $pc_opts libgguf); then
    echo "FAIL: pkg-config $pc_opts libgguf failed" >&2
    exit 1
fi
echo "pkg-config $pc_opts libgguf: $flags"
case $flags in
    *"-I$root"*) ;;
    *) echo "FAIL: pkg-config gives no -I into the installed tree: $flags" >&2; exit 1 ;;
esac

cat > "$tmp/t.c" <<'C'
#include <gguf/gguf.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    const gguf_type_info *t = gguf_type_get(GGUF_T_Q4_K);
    if (!t || strcmp(t->name, "Q4_K") != 0) return 1;
    printf("libgguf %s\n", gguf_version_string());
    return 0;
}
C
# The program links to the library, which in a sanitizer build needs the
# sanitizer runtimes: compile the program with the same options.
# shellcheck disable=SC2086 # $flags and $san are lists of words
if ! $cc $san -o "$tmp/t" "$tmp/t.c" $flags > "$tmp/cc.log" 2>&1; then
    cat "$tmp/cc.log" >&2
    echo "FAIL: a program including <gguf/gguf.h> does not compile and link" >&2
    exit 1
fi
out=$(LD_LIBRARY_PATH=$root$libdir "$tmp/t") || {
    echo "FAIL: the installed test program exited with status $?" >&2; exit 1; }
echo "program output: $out"
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$top_builddir/Makefile")
if [ "$out" != "libgguf $version" ]; then
    echo "FAIL: expected 'libgguf $version', got '$out'" >&2
    exit 1
fi
# It must have used the installed library, not one from the build tree.
if [ "$shared" = yes ] && ! LD_LIBRARY_PATH=$root$libdir ldd "$tmp/t" 2>/dev/null | grep -q "$root$libdir/libgguf.so"; then
    echo "FAIL: the test program does not load $libdir/libgguf.so from the DESTDIR tree" >&2
    LD_LIBRARY_PATH=$root$libdir ldd "$tmp/t" >&2
    exit 1
fi
echo "PASS: installed tree complete; program built with pkg-config runs"
exit 0
