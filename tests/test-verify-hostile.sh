#!/bin/sh
# test-verify-hostile.sh -- gguf-verify on the corpus of malformed GGUF
# files that tests/gguf-hostile writes (its MANIFEST lists, for each file,
# the substrings the reason must contain, or OK for a valid control).
# Each file is given as a path, as redirected standard input, through a
# pipe and gzip-compressed through a pipe, and as a path with -w: a
# malformed file must exit 1 with one line "NAME: FAILED: reason" holding
# every expected substring (in -w mode: no manifest, the reason on
# stderr); a control must be OK (bytes after its data section allowed: the
# corpus makes some).  A crash (status >= 128) or a sanitizer report
# fails.  Outside a sanitizer build each run is limited to 256 MiB of
# address space; in an AddressSanitizer build, any single allocation.

. "${top_srcdir:-.}/tests/test-verify-common.sh"
command -v gzip >/dev/null 2>&1 || { echo "SKIP: gzip is not installed" >&2; exit 77; }

corpus=$tmp/corpus
"$HOSTILE" -o "$corpus" 2>/dev/null || hard_error "gguf-hostile failed"

limit_memory "$HOSTILE"

# verify MODE FILE OPTION...: runs gguf-verify; sets rc, out, err.
verify() {
    _mode=$1
    _file=$2
    shift 2
    case $_mode in
    path | write) (limit; exec "$VERIFY" "$@" "$_file") ;;
    stdin) (limit; exec "$VERIFY" "$@" -) <"$_file" ;;
    pipe) cat "$_file" | (limit; exec "$VERIFY" "$@" -) ;;
    gzip) gzip -c "$_file" | (limit; exec "$VERIFY" "$@" -) ;;
    esac >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
}

tab=$(printf '\t')
nl='
'
files=0
malformed=0
runs=0
while IFS= read -r line; do
    name=${line%%"$tab"*}
    expect=${line#*"$tab"}
    file=$corpus/$name
    files=$((files + 1))
    [ "$expect" = OK ] || malformed=$((malformed + 1))
    for mode in path stdin pipe gzip write; do
        runs=$((runs + 1))
        shown=$file
        [ "$mode" = path ] || [ "$mode" = write ] || shown=-
        opts=
        [ "$mode" = write ] && opts=-w
        [ "$expect" = OK ] && opts="$opts --allow-trailing"
        verify "$mode" "$file" $opts
        what="$name ($mode)"
        case $err in
        *AddressSanitizer* | *LeakSanitizer* | *"runtime error"* | *UndefinedBehaviorSanitizer*)
            fail "$what: sanitizer report: $err"
            continue ;;
        esac
        checks=$((checks + 1))
        if [ "$rc" -ge 128 ]; then
            fail "$what: crashed (exit $rc)"
            continue
        fi
        if [ "$expect" = OK ]; then
            [ "$rc" -eq 0 ] || fail "$what: valid file: exit $rc, expected 0: $out $err"
            if [ "$mode" != write ]; then
                [ "$out" = "$shown: OK" ] || fail "$what: valid file: '$out'"
            else
                [ -n "$out" ] || fail "$what: valid file: no manifest"
            fi
            continue
        fi
        [ "$rc" -eq 1 ] || { fail "$what: exit $rc, expected 1: $out $err"; continue; }
        if [ "$mode" = write ]; then
            [ -z "$out" ] || fail "$what: a manifest for a malformed file"
            reason=${err#"gguf-verify: $shown: FAILED: "}
            [ "$reason" != "$err" ] || { fail "$what: stderr is not 'gguf-verify: $shown: FAILED: ...': $err"; continue; }
        else
            case $out in
            *"$nl"*) fail "$what: more than one line: $out"; continue ;;
            esac
            reason=${out#"$shown: FAILED: "}
            [ "$reason" != "$out" ] || { fail "$what: not '$shown: FAILED: reason': $out"; continue; }
        fi
        left=$expect
        while [ -n "$left" ]; do
            sub=${left%%"$tab"*}
            case $left in *"$tab"*) left=${left#*"$tab"} ;; *) left= ;; esac
            case $reason in
            *"$sub"*) ;;
            *) fail "$what: the reason lacks '$sub': $reason" ;;
            esac
        done
    done
    # --model on top never crashes either.
    verify path "$file" --model qwen2
    runs=$((runs + 1))
    checks=$((checks + 1))
    [ "$rc" -lt 128 ] || fail "$name (--model): crashed (exit $rc)"
    [ "$rc" -eq 1 ] || fail "$name (--model): exit $rc, expected 1 (not a qwen2 model)"
done <"$corpus/MANIFEST"

echo "test-verify-hostile: $files files ($malformed malformed), $runs runs${limit_kb:+, ulimit -v $limit_kb}"
[ "$malformed" -ge 40 ] || fail "corpus too small ($malformed malformed files)"
finish
