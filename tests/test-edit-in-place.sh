#!/bin/sh
# test-edit-in-place.sh -- gguf-edit --in-place: the header rewritten in
# the bytes before the tensor data (padded with gguf_tools.edit.padding,
# resized by the next edit), the data untouched; metadata that does not fit
# refused with FILE unchanged; and, with the fault shim, a crash in the
# middle of the header (the journal then completes it at the next run) and
# a journal cut short, as a crash while it is written leaves it (FILE
# untouched, the journal removed at the next run).

test_name=test-edit-in-place
. "${top_srcdir:-.}/tests/test-fault-common.sh"
EDIT=$top_builddir/gguf-edit
need_exec "$EDIT"

m=$tmp/m.gguf
"$SYNTH" --size tiny --type q8_0 --seed 9 -o "$m" || hard_error "gguf-synth failed"
data_offset() { "$DUMP" --json --no-kv --no-tensors --no-summary "$1" | sed -n 's/.*"data_offset": \([0-9]*\).*/\1/p'; }
tail_of() { tail -c +"$(($(data_offset "$1") + 1))" "$1"; }
key() { "$DUMP" -k "$2" "$1" 2>/dev/null; }
journal=$tmp/.f.gguf.gguf-edit-journal
f=$tmp/f.gguf

# --- an edit in place ------------------------------------------------------------
cp "$m" "$f"
off=$(data_offset "$f")
run 0 delete "$EDIT" --in-place --delete tokenizer.chat_template "$f"
check "in place: the size" [ "$(wc -c < "$f")" -eq "$(wc -c < "$m")" ]
check "in place: the data offset" [ "$(data_offset "$f")" = "$off" ]
tail_of "$m" > "$tmp/data-m"
tail_of "$f" > "$tmp/data-f"
check "in place: the tensor data untouched" same "$tmp/data-m" "$tmp/data-f"
check "in place: the key deleted" [ -z "$(key "$f" tokenizer.chat_template)" ]
check "in place: padding added" [ -n "$(key "$f" gguf_tools.edit.padding)" ]
check "in place: no journal left" [ ! -e "$journal" ]
run 0 verify "$VERIFY" --model qwen2 "$f"
run 0 rename "$EDIT" --in-place --set general.name=str:Short --rename general.type=general.kind "$f"
check "a second edit: the padding resized, one key" [ "$("$DUMP" --json --no-tensors --no-summary "$f" | grep -c '"gguf_tools.edit.padding"')" -eq 1 ]
check "a second edit: the values" [ "$(key "$f" general.name) $(key "$f" general.kind)" = "Short model" ]
tail_of "$f" > "$tmp/data-f"
check "a second edit: the tensor data untouched" same "$tmp/data-m" "$tmp/data-f"
run 0 dry "$EDIT" -n --in-place --set general.name=str:OtherLength "$f"
check "--dry-run --in-place: the padding in the diff" has "$tmp/dry.out" "+gguf_tools.edit.padding: STRING"

# --- what does not fit ---------------------------------------------------------------
cp "$f" "$tmp/before.gguf"
head -c 100000 /dev/zero | tr '\0' x > "$tmp/big.txt"
run 2 big "$EDIT" --in-place --set-file tokenizer.chat_template=str:"$tmp/big.txt" "$f"
check "too big: message" has "$tmp/big.err" "does not fit in the $off bytes before the tensor data: write to OUT instead"
check "too big: FILE unchanged" same "$tmp/before.gguf" "$f"
check "too big: no journal" [ ! -e "$journal" ]
run 2 with-out "$EDIT" --in-place --set general.name=str:X "$f" "$tmp/out.gguf"
check "--in-place with OUT: usage" has "$tmp/with-out.err" "unexpected argument"
run 2 stdin "$EDIT" --in-place --set general.name=str:X - < "$f"
check "--in-place on standard input: usage" has "$tmp/stdin.err" "needs FILE to be a file"

# --- a file that cannot be edited in place: refused before a journal is made -------------
cp "$m" "$f"
faulty FAULT_OP=openw FAULT_ACTION=eacces -- "$EDIT" --in-place --set general.name=str:X "$f" \
    > /dev/null 2> "$tmp/unwritable.err"
check "unwritable: refused" has "$tmp/unwritable.err" "cannot open for writing: Permission denied"
check "unwritable: FILE unchanged" same "$m" "$f"
check "unwritable: no journal left" [ ! -e "$journal" ]
gzip -c "$m" > "$tmp/z.gguf"
cp "$tmp/z.gguf" "$tmp/z.orig"
run 2 gzip "$EDIT" --in-place --set general.name=str:X "$tmp/z.gguf"
check "gzip FILE: refused" has "$tmp/gzip.err" "--in-place needs an uncompressed regular file"
check "gzip FILE: unchanged" same "$tmp/z.orig" "$tmp/z.gguf"
check "gzip FILE: no journal" [ ! -e "$tmp/.z.gguf.gguf-edit-journal" ]

# --- a crash in the middle of the header: the journal completes it --------------------
cp "$m" "$tmp/ref.gguf"
"$EDIT" --in-place --set general.name=str:AfterCrash --delete tokenizer.chat_template "$tmp/ref.gguf" ||
    fail "the reference edit"
cp "$m" "$f"
faulty FAULT_OP=pwrite FAULT_ACTION=crash -- "$EDIT" --in-place --set general.name=str:AfterCrash \
    --delete tokenizer.chat_template "$f" > /dev/null 2>&1
check "crash mid-header: injected" injected "crash after half the bytes"
check "crash mid-header: the journal is there" [ -s "$journal" ]
check "crash mid-header: the header half written" [ "$(cmp "$f" "$tmp/ref.gguf" >/dev/null 2>&1; echo $?)" = 1 ]
run 1 verify-journal "$VERIFY" "$f"
check "gguf-verify names the journal" has "$tmp/verify-journal.out" "an interrupted gguf-edit --in-place left $journal"
run 1 after-crash "$EDIT" -n --set general.name=str:AfterCrash "$f"
check "the next run: completes the edit" has "$tmp/after-crash.err" "completed an interrupted --in-place edit"
check "the next run: the new header whole" same "$tmp/ref.gguf" "$f"
check "the next run: the journal removed" [ ! -e "$journal" ]

# --- a crash while the journal is written: FILE untouched, the journal dropped ----------
# (the journal of the crash above, cut short, beside the file as it was)
cp "$m" "$f"
faulty FAULT_OP=pwrite FAULT_ACTION=crash -- "$EDIT" --in-place --set general.name=str:Never \
    --delete tokenizer.chat_template "$f" > /dev/null 2>&1
check "a journal to cut short" [ -s "$journal" ]
head -c "$(($(wc -c < "$journal") / 2))" "$journal" > "$tmp/half"
mv "$tmp/half" "$journal"
cp "$m" "$f"
run 1 after-partial "$EDIT" -n --set general.name=str:"$(key "$m" general.name)" "$f"
check "the next run: the partial journal removed" has "$tmp/after-partial.err" "removed the unfinished journal"
check "the next run: FILE untouched" same "$m" "$f"
check "the next run: no journal" [ ! -e "$journal" ]

finish
