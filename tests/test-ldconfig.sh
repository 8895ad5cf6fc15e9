#!/bin/sh
# test-ldconfig.sh -- `make install` runs ldconfig (gguf/local.mk,
# install-ldconfig) when installing for real as root, and only then: not
# for a staged install (DESTDIR), not as another user; a failing ldconfig
# is reported and does not fail the install; a libdir the loader does not
# search is said.  A fake ldconfig (LDCONFIG=) records its calls and a fake
# id(1) on PATH plays root or a user, so that the test runs the same as
# root or not and never touches the real loader cache.

test_name=test-ldconfig
. "${top_srcdir:-.}/tests/common.sh"
MAKE=${MAKE:-make}
[ -f "$top_builddir/Makefile" ] || hard_error "no Makefile in $top_builddir"
# Inside make check: start the inner make afresh, without the outer one's
# job server and flags.
unset MAKEFLAGS MFLAGS MAKELEVEL

bin=$tmp/bin
mkdir "$bin" || hard_error "mkdir"
log=$tmp/ldconfig.log
# The fake ldconfig: logs each call; `-p` lists libgguf from $tmp/lib
# when $tmp/in-cache exists; fails when $tmp/ldconfig-fails exists.
cat >"$bin/ldconfig" <<EOF
#!/bin/sh
echo "ldconfig \$*" >>'$log'
[ -e '$tmp/ldconfig-fails' ] && exit 3
if [ "\${1:-}" = -p ] && [ -e '$tmp/in-cache' ]; then
    echo "	libgguf.so.0 (libc6,x86-64) => $tmp/lib/libgguf.so.0"
fi
exit 0
EOF
chmod +x "$bin/ldconfig"
# id -u answers $tmp/uid.
cat >"$bin/id" <<EOF
#!/bin/sh
cat '$tmp/uid'
EOF
chmod +x "$bin/id"

# hook NAME UID [MAKE-ARGS...]: runs only the hook, with libdir $tmp/lib.
hook() {
    _n=$1
    echo "$2" >"$tmp/uid"
    shift 2
    rm -f "$log"
    PATH=$bin:$PATH "$MAKE" -s --no-print-directory -C "$top_builddir" install-ldconfig \
        libdir="$tmp/lib" LDCONFIG="$bin/ldconfig" "$@" >"$tmp/$_n.out" 2>"$tmp/$_n.err"
    _st=$?
    checks=$((checks + 1))
    [ "$_st" -eq 0 ] || fail "$_n: make install-ldconfig exited $_st: $(cat "$tmp/$_n.err")"
}

touch "$tmp/in-cache"
hook root 0
check "root: ldconfig runs (no arguments: the cache is rebuilt)" grep -qx 'ldconfig ' "$log"
check "root: the cache is asked whether it has libgguf" grep -qx 'ldconfig -p' "$log"
echo "$bin/ldconfig" >"$tmp/root.want"
check "root, libdir in the cache: nothing said but the command" same "$tmp/root.out" "$tmp/root.want"

rm -f "$tmp/in-cache"
hook notsearched 0
check "libdir not searched by the loader: said" has "$tmp/notsearched.out" \
    "note: $tmp/lib is not in the dynamic loader's search path"
check "libdir not searched: LD_LIBRARY_PATH suggested" has "$tmp/notsearched.out" \
    "LD_LIBRARY_PATH=$tmp/lib"

hook staged 0 DESTDIR="$tmp/stage"
check "DESTDIR: ldconfig does not run" absent "$log"
check "DESTDIR: nothing said" empty "$tmp/staged.out"

hook user 1000
check "not root: ldconfig does not run" absent "$log"
check "not root: nothing said" empty "$tmp/user.out"

touch "$tmp/ldconfig-fails"
hook fails 0
check "ldconfig fails: the install still succeeds, with a warning" has "$tmp/fails.out" \
    "warning: $bin/ldconfig failed (status 3); the install is complete"
rm -f "$tmp/ldconfig-fails"

# The hook is part of make install itself: a real install into a
# temporary prefix runs it; the same install staged does not.
touch "$tmp/in-cache"
echo 0 >"$tmp/uid"
rm -f "$log"
PATH=$bin:$PATH "$MAKE" -C "$top_builddir" install prefix="$tmp/p" libdir="$tmp/lib" \
    LDCONFIG="$bin/ldconfig" >"$tmp/install.out" 2>&1
check "make install (root): succeeds" [ $? -eq 0 ]
check "make install (root): the library is installed" [ -e "$tmp/lib/libgguf.la" ]
check "make install (root): ldconfig ran" grep -qx 'ldconfig ' "$log"
rm -f "$log"
PATH=$bin:$PATH "$MAKE" -C "$top_builddir" install prefix="$tmp/p" libdir="$tmp/lib" \
    DESTDIR="$tmp/stage" LDCONFIG="$bin/ldconfig" >"$tmp/install-staged.out" 2>&1
check "make install DESTDIR= (root): succeeds" [ $? -eq 0 ]
check "make install DESTDIR= (root): the library is staged" [ -e "$tmp/stage$tmp/lib/libgguf.la" ]
check "make install DESTDIR= (root): ldconfig did not run" absent "$log"

finish
