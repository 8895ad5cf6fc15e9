# tool.sh -- how the shell tests run the project's programs (sourced, not
# run; tests/common.sh sources it).
#
# tool NAME: prints the command a test runs the program NAME (built in
# $top_builddir) by.  Normally the program itself.  When GGUF_TEST_VALGRIND
# names a folder (make check-valgrind sets it), a wrapper there that runs
# the program under valgrind's memcheck: one report per process in that
# folder, holding lines only when memcheck finds an error (a definite leak
# included), and exit status 99 then.  memcheck runs the binary libtool
# keeps in .libs/ with the uninstalled library on LD_LIBRARY_PATH, rather
# than libtool's wrapper script, whose `--mode=execute` re-quoting would
# mangle arguments holding newlines.  A run with standard output closed
# must not go through the wrapper: memcheck's report file would take the
# free descriptor.  OpenMP's threads wait passively there: memcheck runs
# one thread at a time, and a thread spinning at a barrier holds the
# machine until its slice ends (a short qwen-run took four times as long).
# No run may hang the suite: a watchdog beside it kills it (status 137,
# which fails its test) when it still runs after GGUF_TEST_VALGRIND_TIMEOUT
# seconds (default 900).  The wrapper execs memcheck in its own process, so
# the process a test starts, signals and looks at in /proc is memcheck's;
# the watchdog holds none of the test's descriptors, looks every 2 seconds
# and ends with the run.  memcheck emulates the vector float products
# (FMA above all) slowly: when GGUF_TEST_VALGRIND_SIMD names a level and
# the test sets no GGUF_SIMD, qwen-run's runs use that level
# (check-valgrind says scalar: the pipeline tests take half the time;
# test-qwen-run.sh unsets it, so that the vector kernels run under memcheck
# too).  The other tools keep theirs: the scalar quantizers are the slower
# there.  Inlined frames are not read (--read-inline-info=no): a third of
# each run's start-up.
tool() {
    if [ -z "${GGUF_TEST_VALGRIND:-}" ]; then
        echo "$top_builddir/$1"
        return
    fi
    _top=$(cd "$top_builddir" && pwd) || { echo "tool: no $top_builddir" >&2; return 1; }
    _base=$(basename "$1")
    _bin=$_top/$1
    _lib=
    if [ -x "$(dirname "$_bin")/.libs/$_base" ]; then
        _bin=$(dirname "$_bin")/.libs/$_base
        _lib=$_top/gguf/.libs
    fi
    mkdir -p "$GGUF_TEST_VALGRIND/bin" || return 1
    _w=$GGUF_TEST_VALGRIND/bin/$_base
    # Tests run in parallel: each writes its own copy and renames it over.
    _simd=
    [ "$_base" = qwen-run ] && _simd='
if [ -z "${GGUF_SIMD+set}" ] && [ -n "${GGUF_TEST_VALGRIND_SIMD:-}" ]; then
    GGUF_SIMD=$GGUF_TEST_VALGRIND_SIMD; export GGUF_SIMD
fi'
    cat > "$_w.$$" <<EOF
#!/bin/sh
limit=\${GGUF_TEST_VALGRIND_TIMEOUT:-900}
(exec </dev/null >/dev/null 2>&1; t=0
 while kill -0 \$\$ 2>/dev/null; do
     [ \$t -ge \$limit ] && { kill -KILL \$\$; break; }
     sleep 2; t=\$((t + 2))
 done) &
$_simd
OMP_WAIT_POLICY=passive LD_LIBRARY_PATH="$_lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec valgrind -q --read-inline-info=no \\
    --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \\
    --show-leak-kinds=definite --log-file="$GGUF_TEST_VALGRIND/$_base.%p.log" "$_bin" "\$@"
EOF
    chmod +x "$_w.$$" && mv -f "$_w.$$" "$_w" || return 1
    echo "$_w"
}
