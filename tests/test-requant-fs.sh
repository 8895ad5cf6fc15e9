#!/bin/sh
# test-requant-fs.sh -- gguf-requant on a full file system (ENOSPC in the
# middle of the tensor data) and on a read-only one (EROFS), both small
# tmpfs mounts: exit status 2, a message naming OUT and the reason, no OUT
# (an OUT that existed keeps its contents), no temporary file, IN unchanged.
# Needs the right to mount (root with CAP_SYS_ADMIN); skipped otherwise.
# (test-requant-fail.sh covers the same write path with EFBIG everywhere.)

. "${top_srcdir:-.}/tests/test-requant-common.sh"
need_tools

command -v mount >/dev/null 2>&1 && command -v umount >/dev/null 2>&1 || {
    echo "SKIP: mount(8) not found"
    exit 77
}
mkdir "$tmp/full" "$tmp/ro" || hard_error "mkdir"
mount -t tmpfs -o size=256k,mode=0755 tmpfs "$tmp/full" 2>"$tmp/mount.err" || {
    echo "SKIP: cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN): $(cat "$tmp/mount.err")"
    exit 77
}
cleanup_extra='umount "$tmp/full" 2>/dev/null; umount "$tmp/ro" 2>/dev/null'
mount -t tmpfs -o size=64k tmpfs "$tmp/ro" || hard_error "cannot mount the second tmpfs"
echo old >"$tmp/ro/out.gguf" || hard_error "setup"
mount -o remount,ro "$tmp/ro" || hard_error "cannot make the tmpfs read-only"

m=$tmp/small.gguf
synth "$m" --size small --type f16 --seed 2
m_sum=$(sum "$m")

# A full file system: the output (about 1.6 MB) does not fit in 256 kB.
echo old >"$tmp/full/out.gguf" || hard_error "setup"
run 2 enospc "$REQUANT" --from f16 --to q8_0 "$m" "$tmp/full/out.gguf"
check "ENOSPC: message" has "$tmp/enospc.err" "gguf-requant: $tmp/full/out.gguf: write failed at byte"
check "ENOSPC: reason" has "$tmp/enospc.err" "No space left on device"
check "ENOSPC: only the old OUT is left" only "$tmp/full" out.gguf
check "ENOSPC: the old OUT is untouched" [ "$(cat "$tmp/full/out.gguf")" = old ]
check "ENOSPC: the space is free again" [ "$(du -sk "$tmp/full" | cut -f1)" -le 8 ]
# The same through a stream, and with the output on a new name.
cat "$m" | "$REQUANT" --from f16 --to q8_0 - "$tmp/full/new.gguf" 2>"$tmp/enospc2.err"
check "ENOSPC from a stream: exit 2" [ $? -eq 2 ]
check "ENOSPC from a stream: reason" has "$tmp/enospc2.err" "No space left on device"
check "ENOSPC from a stream: no output" only "$tmp/full" out.gguf

# A read-only file system.
run 2 erofs "$REQUANT" --from f16 --to q8_0 "$m" "$tmp/ro/out.gguf"
check "EROFS: message" has "$tmp/erofs.err" "gguf-requant: $tmp/ro/out.gguf: cannot create a temporary file in '$tmp/ro/': Read-only file system"
check "EROFS: nothing new" only "$tmp/ro" out.gguf
check "EROFS: the old OUT is untouched" [ "$(cat "$tmp/ro/out.gguf")" = old ]

check "input unchanged" [ "$(sum "$m")" = "$m_sum" ]
finish
