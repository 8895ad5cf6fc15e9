#!/bin/sh
# test-hostile.sh -- gguf-dump on a corpus of malformed GGUF files.
#
# tests/gguf-hostile writes the corpus and its MANIFEST (NAME, TAB, one or
# more TAB-separated substrings the message must contain, or OK for a valid
# control).  Each file is given to gguf-dump four ways: as a path, as
# redirected stdin, through a pipe, and gzip-compressed through a pipe.
# For a malformed file every way must exit 2 with one line on stderr,
# "gguf-dump: NAME: ...", containing each expected substring, the same
# message (apart from the name) every way; for a control, exit 0 and an
# empty stderr.  A crash (status >= 128) or a sanitizer report fails.
# Outside a sanitizer build each run is limited to 256 MiB of address space;
# in an AddressSanitizer build, any single allocation to 256 MiB.

test_name=test-hostile
. "${top_srcdir:-.}/tests/common.sh"
dump=$(tool gguf-dump)
hostile=$top_builddir/tests/gguf-hostile
need_exec "$dump" "$hostile"
command -v gzip >/dev/null 2>&1 || { echo "SKIP: gzip is not installed" >&2; exit 77; }

corpus=$tmp/corpus
"$hostile" -o "$corpus" || hard_error "gguf-hostile failed"
limit_memory "$hostile"

# dump_as MODE FILE: runs gguf-dump on FILE in MODE; sets rc, err (stderr).
dump_as() {
    case $1 in
    path) (limit; exec "$dump" "$2") ;;
    stdin) (limit; exec "$dump" -) <"$2" ;;
    pipe) cat "$2" | (limit; exec "$dump" -) ;;
    gzip) gzip -c "$2" | (limit; exec "$dump" -) ;;
    esac >"$tmp/out" 2>"$tmp/err"
    rc=$?
    err=$(cat "$tmp/err")
}

files=0
malformed=0
runs=0
# fail_run MESSAGE: a failed check of the current file and mode.
fail_run() {
    fail "$name ($mode): $*"
    printf '%s\n' "$err" | sed -n '1,5s/^/    stderr: /p' >&2
}

tab=$(printf '\t')
nl='
'
while IFS= read -r line; do
    name=${line%%"$tab"*}
    expect=${line#*"$tab"}
    file=$corpus/$name
    files=$((files + 1))
    [ "$expect" = OK ] || malformed=$((malformed + 1))
    rest=
    for mode in path stdin pipe gzip; do
        runs=$((runs + 1))
        dump_as "$mode" "$file"
        case $err in
        *AddressSanitizer* | *LeakSanitizer* | *"runtime error"* | *UndefinedBehaviorSanitizer*)
            fail_run "sanitizer report"
            continue ;;
        esac
        if [ "$rc" -ge 128 ]; then
            fail_run "crashed (exit $rc)"
            continue
        fi
        if [ "$expect" = OK ]; then
            [ "$rc" -eq 0 ] || fail_run "valid file: exit $rc, expected 0"
            [ -z "$err" ] || [ "$rc" -ne 0 ] || fail_run "valid file: stderr not empty"
            [ -s "$tmp/out" ] || fail_run "valid file: nothing on stdout"
            continue
        fi
        [ "$rc" -eq 2 ] || { fail_run "exit $rc, expected 2"; continue; }
        case $err in
        *"$nl"*) fail_run "more than one line on stderr"; continue ;;
        "gguf-dump: "?*) ;;
        *) fail_run "stderr does not start with 'gguf-dump: '"; continue ;;
        esac
        if [ "$mode" = path ]; then
            case $err in
            "gguf-dump: $file: "?*) rest=${err#"gguf-dump: $file: "} ;;
            *) fail_run "message does not start with 'gguf-dump: $file: '"; continue ;;
            esac
            # Every expected substring (TAB-separated) must be in the message
            # after the file name.
            left=$expect
            while [ -n "$left" ]; do
                sub=${left%%"$tab"*}
                case $left in *"$tab"*) left=${left#*"$tab"} ;; *) left= ;; esac
                case $rest in
                *"$sub"*) ;;
                *) fail_run "message lacks '$sub'" ;;
                esac
            done
        elif [ -n "$rest" ]; then
            # Same message as for the path, under another display name.
            case $err in
            "gguf-dump: "?*": $rest") ;;
            *) fail_run "message differs from the path's: '$rest'" ;;
            esac
        else
            fail_run "no path-mode message to compare with"
        fi
    done
done <"$corpus/MANIFEST"

echo "test-hostile: $files files ($malformed malformed), $runs runs, $failures failures${limit_kb:+, ulimit -v $limit_kb}" >&2
[ "$malformed" -ge 40 ] || { echo "test-hostile: corpus too small ($malformed malformed files)" >&2; exit 1; }
[ "$failures" -eq 0 ]
