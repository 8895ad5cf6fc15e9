# man/: manual pages, sections 1 and 3.
dist_man_MANS += man/gguf-dump.1 man/libgguf.3
dist_man_MANS += man/gguf-requant.1
dist_man_MANS += man/gguf-verify.1
dist_man_MANS += man/qwen-run.1
dist_man_MANS += man/gguf-edit.1
