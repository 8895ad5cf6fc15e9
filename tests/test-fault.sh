#!/bin/sh
# test-fault.sh -- the tools' outputs under injected faults (the shim
# tests/fault.c): short writes and EINTR (retried: the output is the same
# as without faults), EIO, ENOSPC and EFBIG at the Nth write, failing
# fsync, fchmod, linkat and rename, and SIGTERM, SIGINT, SIGHUP and SIGKILL
# at chosen calls; each for gguf-requant and gguf-verify --embed, with the
# unnamed temporary file (O_TMPFILE) and with the named one that the shim
# forces (O_TMPFILE refused with EOPNOTSUPP).  After a failure: exit status
# 2 and "prog: OUT: message", or death by the signal; no OUT (an OUT that
# existed keeps its contents); no temporary file, except the named one
# after SIGKILL; the input unchanged.  Standard output (gguf-dump --stats,
# gguf-verify -w, gguf-requant to -) under short and failing writes too;
# and the writer's unit test with the named scheme forced.

test_name=test-fault
. "${top_srcdir:-.}/tests/test-fault-common.sh"

# The medium model: outputs of 7 and 13 MB, so that the writer's 1 MiB
# buffer is written out many times and data goes to write(2) both from
# the buffer and straight from the mapping.
m=$tmp/m.gguf
"$SYNTH" --size medium --seed 5 -o "$m" 2>"$tmp/synth.err" || hard_error "gguf-synth: $(cat "$tmp/synth.err")"
m_sum=$(sum "$m")

# References, without the shim.
"$REQUANT" --from f16 --to q8_0 "$m" "$tmp/ref-requant.gguf" || hard_error "gguf-requant"
"$VERIFY" --embed "$m" "$tmp/ref-embed.gguf" || hard_error "gguf-verify --embed"
"$DUMP" --stats "$m" >"$tmp/ref-stats.txt" || hard_error "gguf-dump --stats"
"$VERIFY" -w "$m" >"$tmp/ref-manifest.txt" || hard_error "gguf-verify -w"

# Signals sent while the test runs in the background of some shell start
# ignored, and the tools leave ignored signals alone (as under nohup): give
# the tools the default action of those the shim sends.
dflt=
if env --default-signal=INT,TERM,HUP true 2>/dev/null; then
    dflt="env --default-signal=INT,TERM,HUP"
fi

# wcase NAME STATUS WRITER OLD FAULT_SETTING...: runs WRITER (requant or
# embed) with the shim and the settings (and $scheme) on IN, into OUT
# $out in a fresh directory $d (under $cases), which first gets an OUT
# holding "old" when OLD is "old".  Checks the exit status and that IN is unchanged;
# sets $prog, $ref and $err.
wcase() {
    _name=$1 _want=$2 _w=$3 _old=$4
    shift 4
    d=$cases/$_name
    out=$d/out.gguf
    err=$tmp/$_name.err
    mkdir -p "$d" || hard_error "mkdir"
    [ "$_old" = old ] && echo old >"$out"
    case $_w in
    requant)
        prog=gguf-requant ref=$tmp/ref-requant.gguf
        set -- "$@" -- $dflt "$REQUANT" --from f16 --to q8_0 "$m" "$out" ;;
    embed)
        prog=gguf-verify ref=$tmp/ref-embed.gguf
        set -- "$@" -- $dflt "$VERIFY" --embed "$m" "$out" ;;
    esac
    faulty $scheme "$@" >"$tmp/$_name.out" 2>"$err"
    _st=$?
    check "$_name: exit status $_st, expected $_want: $(head -c 300 "$err")" [ "$_st" -eq "$_want" ]
    check "$_name: input unchanged" [ "$(sum "$m")" = "$m_sum" ]
}

# left_nothing NAME [old]: $d holds no OUT (or, with old, the old one,
# untouched) and no temporary file.
left_nothing() {
    if [ "${2:-}" = old ]; then
        check "$1: only the old OUT is left" only "$d" out.gguf
        check "$1: the old OUT is untouched" [ "$(cat "$out")" = old ]
    else
        check "$1: no OUT, no temporary file" only "$d"
    fi
}

# whole NAME: OUT is there, the same bytes as without faults, alone.
whole() {
    check "$1: the output is whole" same "$out" "$ref"
    check "$1: no temporary file" only "$d" out.gguf
}

# says NAME TEXT: the message is "prog: OUT: TEXT...".
says() { check "$1: message" has "$err" "$prog: $out: $2"; }

# hidden_left NAME: exactly one hidden temporary file is in $d (a SIGKILL
# with the named scheme); it is removed for the next case.
hidden_left() {
    _n=$(ls -A "$d" | grep -c '^\.out\.gguf\.')
    check "$1: the temporary file is left (found $_n)" [ "$_n" -eq 1 ]
    rm -f "$d"/.out.gguf.*
}

cases=$tmp/c
for scheme in "" FAULT_TMPFILE=EOPNOTSUPP; do
    for w in requant embed; do
        c=$w${scheme:+-named}

        # --- retried: short writes, EINTR ---
        wcase "$c-short" 0 "$w" new FAULT_ACTION=short
        check "$c-short: short writes happened" injected "short writes"
        whole "$c-short"
        if [ -n "$scheme" ]; then
            check "$c-short: O_TMPFILE was refused" injected "O_TMPFILE refused"
        fi
        wcase "$c-short-old" 0 "$w" old FAULT_ACTION=short FAULT_AT=3
        whole "$c-short-old"
        wcase "$c-eintr" 0 "$w" old FAULT_ACTION=eintr FAULT_AT=2
        check "$c-eintr: EINTR happened" injected "Interrupted system call"
        whole "$c-eintr"

        # --- failed writes ---
        for at in 1 4; do
            wcase "$c-eio-$at" 2 "$w" new FAULT_ACTION=eio FAULT_AT=$at
            says "$c-eio-$at" "write failed at byte"
            check "$c-eio-$at: reason" has "$err" "Input/output error"
            left_nothing "$c-eio-$at"
        done
        wcase "$c-enospc" 2 "$w" old FAULT_ACTION=enospc FAULT_AT=2
        says "$c-enospc" "write failed at byte"
        check "$c-enospc: reason" has "$err" "No space left on device"
        left_nothing "$c-enospc" old
        wcase "$c-efbig" 2 "$w" new FAULT_ACTION=efbig FAULT_AT=3
        check "$c-efbig: reason" has "$err" "File too large"
        left_nothing "$c-efbig"
        wcase "$c-fsync" 2 "$w" old FAULT_OP=fsync FAULT_ACTION=eio
        says "$c-fsync" "fsync failed"
        left_nothing "$c-fsync" old

        # --- signals while writing and while finishing ---
        for sig in TERM:143 INT:130 HUP:129; do
            name=${sig%:*} st=${sig#*:}
            wcase "$c-sig$name" "$st" "$w" old FAULT_ACTION=sig$(echo "$name" | tr A-Z a-z) FAULT_AT=3
            left_nothing "$c-sig$name" old
        done
        wcase "$c-fsync-term" 143 "$w" new FAULT_OP=fsync FAULT_ACTION=sigterm
        left_nothing "$c-fsync-term"

        # --- SIGKILL: no handler runs ---
        wcase "$c-kill" 137 "$w" old FAULT_ACTION=sigkill FAULT_AT=3
        if [ -n "$scheme" ]; then
            hidden_left "$c-kill"
            left_nothing "$c-kill" old
        elif fs_has_tmpfile "$d"; then
            left_nothing "$c-kill" old
        else
            echo "note: $(stat -f -c %T "$d") may lack O_TMPFILE; $c-kill not checked for leftovers"
            rm -f "$d"/.out.gguf.*
        fi
    done
done

# --- where the two schemes differ ---------------------------------------------------------
scheme=
for w in requant embed; do
    # Linking the unnamed file: straight to a new OUT; to a hidden name
    # renamed over an existing one (the first linkat meets EEXIST).
    wcase "$w-link" 2 "$w" new FAULT_OP=linkat FAULT_ACTION=eio
    says "$w-link" "cannot link the output into place"
    left_nothing "$w-link"
    wcase "$w-link-old" 2 "$w" old FAULT_OP=linkat FAULT_ACTION=eio FAULT_AT=2
    says "$w-link-old" "cannot link the output into place"
    left_nothing "$w-link-old" old
    wcase "$w-rename" 2 "$w" old FAULT_OP=rename FAULT_ACTION=eio
    says "$w-rename" "cannot rename over the target"
    left_nothing "$w-rename" old
    # A signal between the hidden link and the rename waits for the
    # rename: the whole output is in place, no hidden name is left.
    wcase "$w-rename-term" 143 "$w" old FAULT_OP=rename FAULT_ACTION=sigterm
    whole "$w-rename-term"

    scheme=FAULT_TMPFILE=EOPNOTSUPP
    wcase "$w-named-rename" 2 "$w" old FAULT_OP=rename FAULT_ACTION=eio
    says "$w-named-rename" "cannot rename over the target"
    left_nothing "$w-named-rename" old
    wcase "$w-named-fchmod" 2 "$w" new FAULT_OP=fchmod FAULT_ACTION=eio
    says "$w-named-fchmod" "cannot set the mode"
    left_nothing "$w-named-fchmod"
    # A signal while the writer creates the named file waits until the
    # handler knows the name, and then removes it.
    wcase "$w-named-fchmod-term" 143 "$w" new FAULT_OP=fchmod FAULT_ACTION=sigterm
    check "$w-named-fchmod-term: the signal was sent" injected "Terminated"
    left_nothing "$w-named-fchmod-term"
    scheme=
done

# --- SIGKILL on tmpfs, where /dev/shm is one ------------------------------------------------
if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] &&
    shm=$(mktemp -d /dev/shm/test-fault.XXXXXX 2>/dev/null); then
    cleanup_extra='rm -rf "$shm"'
    cases=$shm
    for w in requant embed; do
        wcase "$w-tmpfs-kill" 137 "$w" old FAULT_ACTION=sigkill FAULT_AT=3
        left_nothing "$w-tmpfs-kill" old
        wcase "$w-tmpfs" 0 "$w" old
        whole "$w-tmpfs"
    done
    cases=$tmp/c
else
    echo "note: /dev/shm is not a writable tmpfs; SIGKILL not checked on tmpfs"
fi

# --- standard output ------------------------------------------------------------------------
# scase NAME STATUS FAULT_SETTING... -- COMMAND...: COMMAND with the shim
# faulting its writes to descriptor 1, stdout into $tmp/NAME.out.
scase() {
    _name=$1 _want=$2
    shift 2
    err=$tmp/$_name.err
    faulty FAULT_FD=1 "$@" >"$tmp/$_name.out" 2>"$err"
    _st=$?
    check "$_name: exit status $_st, expected $_want: $(head -c 300 "$err")" [ "$_st" -eq "$_want" ]
    check "$_name: input unchanged" [ "$(sum "$m")" = "$m_sum" ]
}
scase dump-short 0 FAULT_ACTION=short -- "$DUMP" --stats "$m"
check "dump-short: short writes happened" injected "short writes"
check "dump-short: the same output" same "$tmp/dump-short.out" "$tmp/ref-stats.txt"
scase manifest-short 0 FAULT_ACTION=short -- "$VERIFY" -w "$m"
check "manifest-short: the same output" same "$tmp/manifest-short.out" "$tmp/ref-manifest.txt"
scase requant-stdout-short 0 FAULT_ACTION=short -- "$REQUANT" --from f16 --to q8_0 "$m" -
check "requant-stdout-short: the same output" same "$tmp/requant-stdout-short.out" "$tmp/ref-requant.gguf"
scase embed-stdout-short 0 FAULT_ACTION=short FAULT_AT=2 -- "$VERIFY" --embed "$m" -
check "embed-stdout-short: the same output" same "$tmp/embed-stdout-short.out" "$tmp/ref-embed.gguf"
for e in eio:"Input/output error" enospc:"No space left on device"; do
    a=${e%%:*} reason=${e#*:}
    scase "dump-$a" 2 FAULT_ACTION="$a" -- "$DUMP" --stats "$m"
    check "dump-$a: message" has "$err" "gguf-dump: write error: $reason"
    scase "manifest-$a" 2 FAULT_ACTION="$a" -- "$VERIFY" -w "$m"
    check "manifest-$a: message" has "$err" "gguf-verify: write error: $reason"
    scase "requant-stdout-$a" 2 FAULT_ACTION="$a" FAULT_AT=2 -- "$REQUANT" --from f16 --to q8_0 "$m" -
    check "requant-stdout-$a: message" has "$err" "gguf-requant: (stdout): write failed at byte 1048576"
    check "requant-stdout-$a: reason" has "$err" "$reason"
done

# --- a split output: the message names the shard, not its hidden name -------------------------
run 0 split-synth "$SYNTH" --size tiny --type q8_0 -o "$tmp/sp.gguf"
run 2 split-enospc faulty FAULT_ACTION=enospc FAULT_AT=2 -- "$REQUANT" --split-max-tensors 10 "$tmp/sp.gguf" "$tmp/spo.gguf"
check "split output, requant: the shard named" grep -q "^gguf-requant: $tmp/spo-0000[123]-of-00003.gguf: write failed" "$tmp/split-enospc.err"
check "split output, requant: no hidden name" [ -z "$(grep partial "$tmp/split-enospc.err")" ]
check "split output, requant: nothing left" [ -z "$(ls -A "$tmp" | grep -e '^spo' -e partial)" ]
run 0 split-ok "$REQUANT" --split-max-tensors 10 "$tmp/sp.gguf" "$tmp/sps.gguf"
run 2 edit-enospc faulty FAULT_ACTION=enospc FAULT_AT=5 -- "$top_builddir/gguf-edit" --all-shards \
    --set general.name=str:X "$tmp/sps-00001-of-00003.gguf" "$tmp/spe.gguf" # (writes 1-3: the new metadata, read back)
check "split output, edit: the shard named" grep -q "^gguf-edit: $tmp/spe-00002-of-00003.gguf: copy failed" "$tmp/edit-enospc.err"
check "split output, edit: no hidden name" [ -z "$(grep partial "$tmp/edit-enospc.err")" ]
check "split output, edit: nothing left" [ -z "$(ls -A "$tmp" | grep -e '^spe' -e partial)" ]
# --- the writer's unit test with each scheme ---------------------------------------------------
run 0 test-write-named faulty FAULT_TMPFILE=EOPNOTSUPP TEST_WRITE_TEMP=named -- \
    "$top_builddir/tests/test-write"
if fs_has_tmpfile "${TMPDIR:-/tmp}"; then
    run 0 test-write-unnamed env TEST_WRITE_TEMP=unnamed "$top_builddir/tests/test-write"
fi

finish
