# test-fault-common.sh -- shared by the tests that inject faults with the
# shim tests/fault.c (sourced, not run).
#
# Provides: $DUMP $REQUANT $VERIFY $RUN $SYNTH, $fault_log; faulty (runs a
# command with the shim preloaded); hash_of; fs_has_tmpfile; and everything
# from tests/common.sh (the file helpers absent, entries, only, sum too).
# Skips (77) when the shim cannot be built here (no shared libraries).

. "${top_srcdir:-.}/tests/common.sh"
DUMP=$top_builddir/gguf-dump
REQUANT=$top_builddir/gguf-requant
VERIFY=$top_builddir/gguf-verify
RUN=$top_builddir/qwen-run
SYNTH=$top_builddir/tests/gguf-synth
need_exec "$DUMP" "$REQUANT" "$VERIFY" "$RUN" "$SYNTH"

shim=$top_builddir/tests/.libs/libfault.so
if [ ! -f "$shim" ]; then
    echo "SKIP: no fault shim at $shim (configured with --disable-shared?)" >&2
    exit 77
fi
case $shim in /*) ;; *) shim=$(pwd)/$shim ;; esac

# A tool built with GCC's -fsanitize=address links the AddressSanitizer
# runtime dynamically, and the runtime checks that it is the first library
# loaded.  It is not put first in LD_PRELOAD (the libtool wrappers' helpers,
# sed and the like, would then carry it and report their own leaks): the
# check is turned off instead; the shim defines no allocator, so the
# runtime's stays in force.  Clang links the runtime into the program:
# nothing to do then.
for _b in "$top_builddir/.libs/gguf-dump" "$top_builddir/gguf-dump"; do
    [ -f "$_b" ] || continue
    if ldd "$_b" 2>/dev/null | grep -q '^[[:space:]]*libasan'; then
        ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
        export ASAN_OPTIONS
    fi
    break
done

fault_log=$tmp/fault.log

# faulty VAR=VALUE... -- COMMAND...: runs COMMAND with the shim loaded and
# the FAULT_* settings given (FAULT_LOG is $fault_log, emptied first).
faulty() {
    : >"$fault_log"
    _envs=
    while [ "$1" != "--" ]; do
        _envs="$_envs $1"
        shift
    done
    shift
    # shellcheck disable=SC2086
    env LD_PRELOAD="$shim" FAULT_LOG="$fault_log" $_envs "$@"
}

# injected TEXT: the shim logged a fault holding TEXT.
injected() { grep -F -e "$1" "$fault_log" >/dev/null; }

# fs_has_tmpfile DIR: DIR is on a file system known to take O_TMPFILE
# (Linux: ext2/3/4, tmpfs, xfs, btrfs, f2fs).
fs_has_tmpfile() {
    [ "$(uname -s)" = Linux ] || return 1
    case $(stat -f -c %T "$1" 2>/dev/null) in
    ext2/ext3|tmpfs|xfs|btrfs|f2fs) return 0 ;;
    *) return 1 ;;
    esac
}
