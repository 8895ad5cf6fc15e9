#!/bin/sh
# installcheck.sh -- `make installcheck` (which make distcheck runs after
# installing): builds tests/installcheck.c against the INSTALLED libgguf
# with nothing but what the installed libgguf.pc says, and runs it:
#
#   shared  $CC t.c $(pkg-config --cflags --libs libgguf), run with the
#           installed library directory on LD_LIBRARY_PATH (and checked to
#           load libgguf.so from there);
#   static  $CC -static t.c $(pkg-config --static --cflags --libs libgguf):
#           libgguf.a and every library it needs (libm, the OpenMP
#           runtime, zlib, libxxhash, from Requires.private and
#           Libs.private), no shared object at all.
#
# pkg-config looks in $libdir/pkgconfig of the installation only (with
# DESTDIR, in the staged tree, which PKG_CONFIG_SYSROOT_DIR maps back).
# A kind of library that configure did not build (--disable-shared,
# --disable-static) is not tried, and neither is the static link in a
# sanitizer build (the sanitizer runtimes cannot be linked statically) or
# where the compiler cannot link even an empty program with -static (no
# libc.a); each is said on stdout.  Exits 0 when every link tried works
# and its program passes, 1 otherwise.
#
#   Usage: installcheck.sh SOURCE     with CC, CFLAGS, LDFLAGS,
#          SANITIZER_CFLAGS, PKG_CONFIG, libdir and DESTDIR in the
#          environment (see installcheck-local in tests/local.mk).

src=${1:?usage: installcheck.sh SOURCE}
: "${CC:?CC is not set}" "${libdir:?libdir is not set}"
PKG_CONFIG=${PKG_CONFIG:-pkg-config}
CFLAGS=${CFLAGS:-}
LDFLAGS=${LDFLAGS:-}
SANITIZER_CFLAGS=${SANITIZER_CFLAGS:-}
DESTDIR=${DESTDIR:-}
lib=$DESTDIR$libdir

say() { echo "installcheck: $*"; }
bad() { echo "installcheck: FAIL: $*" >&2; status=1; }

[ -f "$lib/pkgconfig/libgguf.pc" ] || {
    echo "installcheck: $lib/pkgconfig/libgguf.pc is not installed (run make install first)" >&2
    exit 1
}
command -v "$PKG_CONFIG" >/dev/null 2>&1 || {
    echo "installcheck: $PKG_CONFIG not found (install pkg-config)" >&2
    exit 1
}
PKG_CONFIG_PATH=$lib/pkgconfig
export PKG_CONFIG_PATH
if [ -n "$DESTDIR" ]; then
    PKG_CONFIG_SYSROOT_DIR=$DESTDIR
    export PKG_CONFIG_SYSROOT_DIR
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gguf-installcheck.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
status=0

# build KIND CC-OPTIONS... -- PKG-CONFIG-OPTIONS...: compiles and links
# $tmp/KIND; returns 1 after reporting a failure.
build() {
    kind=$1
    shift
    cc_opts=
    while [ "$1" != -- ]; do cc_opts="$cc_opts $1"; shift; done
    shift
    if ! flags=$("$PKG_CONFIG" "$@" libgguf 2>"$tmp/$kind.pc.err"); then
        bad "$kind: $PKG_CONFIG $* libgguf: $(cat "$tmp/$kind.pc.err")"
        return 1
    fi
    say "$kind: $PKG_CONFIG $* libgguf: $flags"
    # shellcheck disable=SC2086 # the options are lists of words
    if ! $CC $cc_opts $CFLAGS $LDFLAGS -o "$tmp/$kind" "$src" $flags >"$tmp/$kind.cc.log" 2>&1; then
        cat "$tmp/$kind.cc.log" >&2
        bad "$kind: $CC$cc_opts ... $src $flags does not link"
        return 1
    fi
}

# run KIND [ENV=VALUE]: runs $tmp/KIND on a directory of its own.
run() {
    mkdir "$tmp/$1.d" || return 1
    if out=$(env ${2:+"$2"} "$tmp/$1" "$tmp/$1.d" 2>&1); then
        say "$1: $out"
    else
        bad "$1: the program failed: $out"
    fi
}

if [ -e "$lib/libgguf.so" ]; then
    if build shared $SANITIZER_CFLAGS -- --cflags --libs; then
        run shared "LD_LIBRARY_PATH=$lib"
        # The installed library, not some other libgguf.so.
        if ! LD_LIBRARY_PATH=$lib ldd "$tmp/shared" | grep -q " $lib/libgguf\.so"; then
            LD_LIBRARY_PATH=$lib ldd "$tmp/shared" >&2
            bad "shared: the program does not load $lib/libgguf.so"
        fi
    fi
else
    say "shared: no $lib/libgguf.so (configured with --disable-shared): not tried"
fi

if [ ! -f "$lib/libgguf.a" ]; then
    say "static: no $lib/libgguf.a (configured with --disable-static): not tried"
elif [ -n "$SANITIZER_CFLAGS" ]; then
    say "static: a sanitizer build cannot be linked with -static: not tried"
elif ! echo 'int main(void) { return 0; }' >"$tmp/empty.c" ||
        ! $CC -static -o "$tmp/empty" "$tmp/empty.c" >"$tmp/empty.log" 2>&1; then
    say "static: $CC cannot link even an empty program with -static (no libc.a?): not tried"
else
    if build static -static -- --static --cflags --libs; then
        # No shared object: nothing for a loader to find elsewhere.
        if command -v readelf >/dev/null 2>&1 && readelf -d "$tmp/static" 2>/dev/null | grep -q NEEDED; then
            readelf -d "$tmp/static" | grep NEEDED >&2
            bad "static: the program needs shared libraries"
        fi
        run static
    fi
fi

[ "$status" -eq 0 ] && say "PASS: programs built with the installed libgguf.pc run"
exit "$status"
