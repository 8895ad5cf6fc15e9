/*
 * gguf.h -- read, validate and write GGUF model files.
 *
 * Installed as <gguf/gguf.h>.  Every public name starts with gguf_ (types,
 * functions) or GGUF_ (macros, enum constants), and none of them is a name
 * that libggml exports, so both libraries can live in one process.
 *
 * Conventions used throughout:
 *  - Fallible calls return an int status from enum gguf_status: GGUF_OK (0)
 *    on success, a positive GGUF_E_* code otherwise.  When the caller passes
 *    a non-NULL gguf_error, it receives the status, errno (where one applies),
 *    the byte offset concerned (where one applies) and a one-line message
 *    that names the file, the item and the offset, ready to be printed after
 *    "prog: ".  Passing NULL is allowed everywhere an error is taken.
 *  - The library never prints, never exits and never aborts on file content.
 *  - Pointers returned by getters are borrowed: they stay valid until the
 *    gguf_file they came from is closed.  Strings from files are gguf_str
 *    {ptr, len} and are NOT terminated by NUL.
 *  - Every destroyer accepts NULL.
 *
 * Threads (libgguf(3), THREAD SAFETY, says the same at more length):
 *  - Distinct handles (gguf_file, gguf_writer, gguf_hasher) are
 *    independent: any number of threads may each use their own at once,
 *    gguf_open() and gguf_writer_finish() included.  The library keeps no
 *    global state but the SIMD level (below).
 *  - One gguf_file may be read by any number of threads at once once
 *    gguf_open() has returned: everything is parsed, indexed (the hashed
 *    key and tensor names, the data-offset order) and checked during the
 *    open, and no getter caches, sorts or allocates later, so every
 *    function taking a const gguf_file * only reads.  gguf_read_data()
 *    and gguf_hash_file() on a mapped or memory input only read too (the
 *    latter's madvise() hints are per call and merely hints).  Nothing
 *    may use the handle while or after one thread calls gguf_close().
 *  - A stream or gzip input (gguf_input_mode() GGUF_INPUT_STREAM or
 *    GGUF_INPUT_GZIP) has one read position: gguf_read_data(),
 *    gguf_read_to_end() and gguf_hash_file() advance it, so call them
 *    from one thread at a time (and gguf_file_size() and
 *    gguf_stopped_at_trailing(), which report it, not alongside them).
 *    The metadata was buffered at open and never moves: the getters
 *    stay safe from any thread meanwhile.  Only one handle should read
 *    standard input ("-").
 *  - A gguf_writer or a gguf_hasher is used by one thread at a time.
 *    Writers on different threads may write into the same directory:
 *    their temporary names never collide.  Where /proc is missing, the
 *    writer reads the umask with umask(2), which for an instant sets it
 *    to 022 for the whole process.
 *  - A gguf_error is written only by the call it is passed to; give
 *    each thread its own (NULL is fine).  gguf_strerror() and the type
 *    and name tables return constant strings.
 *  - <gguf/quant.h>: the row functions and gguf_matmul() are reentrant;
 *    the *_rows() calls run their own OpenMP team (nested inside a
 *    caller's parallel region, OpenMP's nesting rules apply), and may be
 *    called from several threads at once.  gguf_matmul() runs on the
 *    calling thread: split rows or columns among threads, each writing
 *    its own part of the output.  The SIMD level is process-wide, read
 *    and written atomically; gguf_simd_set() may be called while other
 *    threads compute: each call uses one level throughout, and every
 *    function but gguf_matmul() gives the same bytes at every level, so
 *    only gguf_matmul() results can change (within its stated bound)
 *    between calls made before and after the switch.  GGUF_SIMD is read
 *    with getenv() at the first use of the level.
 */
#ifndef GGUF_GGUF_H
#define GGUF_GGUF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(GGUF_BUILDING_LIBRARY) && defined(__GNUC__)
#define GGUF_API __attribute__((visibility("default")))
#else
#define GGUF_API
#endif

/* ------------------------------------------------------------------------ */
/* Status codes and errors                                                   */

enum gguf_status {
    GGUF_OK = 0,
    GGUF_E_IO,          /* read, write, open, mmap, fsync ... failed (errno set) */
    GGUF_E_NOMEM,       /* out of memory */
    GGUF_E_FORMAT,      /* the file is malformed */
    GGUF_E_UNSUPPORTED, /* well-formed but not supported (e.g. a type we cannot compute) */
    GGUF_E_NOT_FOUND,   /* no such key or tensor */
    GGUF_E_INVALID,     /* invalid argument (caller misuse) */
    GGUF_E_TYPE,        /* value exists but has another type than asked for */
    GGUF_E_DEVICE       /* accelerator failure */
};

#define GGUF_ERROR_MESSAGE_MAX 512

/* Detail of the last failure of one call.  Owned by the caller. */
typedef struct gguf_error {
    int status;         /* enum gguf_status */
    int sys_errno;      /* errno for GGUF_E_IO, else 0 */
    uint64_t offset;    /* byte offset in the file the error concerns, or UINT64_MAX */
    char message[GGUF_ERROR_MESSAGE_MAX]; /* "FILE: item: problem (at byte N)" */
} gguf_error;

/* Static text for a status code ("malformed file", ...).  Never NULL. */
GGUF_API const char *gguf_strerror(int status);

/* Version of the library as "MAJOR.MINOR.PATCH"; never NULL. */
GGUF_API const char *gguf_version_string(void);

/* A string read from a file: len bytes at ptr, not NUL-terminated, may
 * contain any bytes (including NUL and invalid UTF-8). */
typedef struct gguf_str {
    const char *ptr;
    size_t len;
} gguf_str;

/* ------------------------------------------------------------------------ */
/* Metadata value types (the GGUF KV type ids, as stored in files)          */

enum gguf_vtype {
    GGUF_VT_UINT8 = 0,
    GGUF_VT_INT8 = 1,
    GGUF_VT_UINT16 = 2,
    GGUF_VT_INT16 = 3,
    GGUF_VT_UINT32 = 4,
    GGUF_VT_INT32 = 5,
    GGUF_VT_FLOAT32 = 6,
    GGUF_VT_BOOL = 7,
    GGUF_VT_STRING = 8,
    GGUF_VT_ARRAY = 9,
    GGUF_VT_UINT64 = 10,
    GGUF_VT_INT64 = 11,
    GGUF_VT_FLOAT64 = 12,
    GGUF_VT_COUNT = 13
};

/* Name of a value type as gguf-py and llama.cpp print it ("UINT32",
 * "STRING", "ARRAY", ...); NULL for an id >= GGUF_VT_COUNT. */
GGUF_API const char *gguf_vtype_name(uint32_t vtype);

/* Size in bytes of one scalar of a fixed-size type (1, 2, 4 or 8); 0 for
 * STRING, ARRAY and unknown ids. */
GGUF_API size_t gguf_vtype_size(uint32_t vtype);

/* ------------------------------------------------------------------------ */
/* Tensor types (the ggml type ids)                                         */

enum gguf_ttype {
    GGUF_T_F32 = 0, GGUF_T_F16 = 1, GGUF_T_Q4_0 = 2, GGUF_T_Q4_1 = 3,
    GGUF_T_Q4_2 = 4, GGUF_T_Q4_3 = 5, /* removed from ggml; layout kept */
    GGUF_T_Q5_0 = 6, GGUF_T_Q5_1 = 7, GGUF_T_Q8_0 = 8, GGUF_T_Q8_1 = 9,
    GGUF_T_Q2_K = 10, GGUF_T_Q3_K = 11, GGUF_T_Q4_K = 12, GGUF_T_Q5_K = 13,
    GGUF_T_Q6_K = 14, GGUF_T_Q8_K = 15,
    GGUF_T_IQ2_XXS = 16, GGUF_T_IQ2_XS = 17, GGUF_T_IQ3_XXS = 18,
    GGUF_T_IQ1_S = 19, GGUF_T_IQ4_NL = 20, GGUF_T_IQ3_S = 21,
    GGUF_T_IQ2_S = 22, GGUF_T_IQ4_XS = 23,
    GGUF_T_I8 = 24, GGUF_T_I16 = 25, GGUF_T_I32 = 26, GGUF_T_I64 = 27,
    GGUF_T_F64 = 28, GGUF_T_IQ1_M = 29, GGUF_T_BF16 = 30,
    GGUF_T_Q4_0_4_4 = 31, GGUF_T_Q4_0_4_8 = 32, GGUF_T_Q4_0_8_8 = 33,
    GGUF_T_TQ1_0 = 34, GGUF_T_TQ2_0 = 35,
    GGUF_T_IQ4_NL_4_4 = 36, GGUF_T_IQ4_NL_4_8 = 37, GGUF_T_IQ4_NL_8_8 = 38,
    GGUF_T_MXFP4 = 39, GGUF_T_NVFP4 = 40, GGUF_T_Q1_0 = 41,
    GGUF_T_COUNT = 42
};

/* Facts about one tensor type. */
typedef struct gguf_type_info {
    const char *name;       /* "Q4_K", "F32", ... */
    uint32_t block_size;    /* elements per block (1 for plain types) */
    uint32_t type_size;     /* bytes per block */
    int quantized;          /* 1 for block-quantized types */
    int removed;            /* 1 for ids ggml no longer computes (layout kept) */
} gguf_type_info;

/* Information about tensor type id `type`, or NULL when the id is unknown. */
GGUF_API const gguf_type_info *gguf_type_get(uint32_t type);

/* Name of tensor type id `type` ("Q6_K"), or NULL when unknown. */
GGUF_API const char *gguf_type_str(uint32_t type);

/* Looks a tensor type up by name, case-insensitively ("q4_k", "Q4_K").
 * Returns GGUF_OK and stores the id, or GGUF_E_NOT_FOUND. */
GGUF_API int gguf_type_parse(const char *name, uint32_t *type);

/* Bytes taken by ne0 elements of `type` (one row), or 0 when ne0 is not a
 * multiple of the block size, the type is unknown, or the size overflows.
 * gguf_row_bytes(t, 0) is 0 as well: check the block size to tell apart. */
GGUF_API uint64_t gguf_row_bytes(uint32_t type, uint64_t ne0);

/* Name of a general.file_type value (llama.cpp's LLAMA_FTYPE_*), without
 * the MOSTLY_ prefix: 15 -> "Q4_K_M", 0 -> "ALL_F32"; NULL when unknown. */
GGUF_API const char *gguf_file_type_name(uint32_t file_type);

/* ------------------------------------------------------------------------ */
/* Reading                                                                   */

typedef struct gguf_file gguf_file;

/* The largest metadata section (header, KV pairs, tensor infos) gguf_open()
 * accepts: 256 MiB.  Real models carry a few MiB (a 256k-token vocabulary
 * with its scores, types and merges is about 12 MiB); the limit is there
 * so that what a hostile or corrupt file can make the parser hold stays
 * bounded, since the cost follows the metadata's size, not its counts. */
#define GGUF_METADATA_MAX (256ull << 20)

/* The peak memory gguf_open() takes for a file, as a multiple of its
 * metadata size, with the metadata bytes themselves included: for a
 * mapped file (those bytes are mapped and read once) and for a stream or
 * gzip input (they are buffered, in a buffer that grows by doubling).
 * Measured over the shapes that cost most per byte (tests/test-meta-memory
 * checks the bounds on hundreds of thousands of tiny scalar pairs, empty
 * arrays, empty nested arrays, empty strings and empty tensors): at most
 * 6.9x and 7.8x, the worst being scalar pairs with 3-byte keys, 16 bytes
 * in the file and 72 in their gguf_kv.  Real files, whose bulk is long
 * string arrays, take 1.5x and 2x (a Qwen2.5 vocabulary: 5.9 MB of
 * metadata).  With GGUF_METADATA_MAX, no file makes
 * gguf_open() hold more than 2 GiB. */
#define GGUF_PARSE_MEM_MAPPED 7
#define GGUF_PARSE_MEM_STREAM 8

/* Flags for gguf_open(). */
enum gguf_open_flags {
    /* Read the input as a stream even when it could be mapped. */
    GGUF_OPEN_NO_MMAP = 1u << 0,
    /* For stream input: stop after the header, leaving the stream at the
     * start of the data section, so that tensor data can be read in offset
     * order with gguf_read_data().  Without this flag a stream is read to
     * its end (data discarded) so that its size is known and every tensor
     * range is checked exactly as for a mapped file. */
    GGUF_OPEN_SEQUENTIAL = 1u << 1,
    /* For GGUF_OPEN_SEQUENTIAL streams, for callers to whom any byte after
     * the data section is an error: gguf_hash_file() and gguf_read_to_end()
     * read at most GGUF_TRAILING_READ_MAX bytes past the padding after the
     * last tensor instead of reading the input to its end, so that an
     * endless input (a model followed by /dev/zero) is decided at once
     * while a short tail is still read and counted exactly.  See
     * gguf_stopped_at_trailing().  No effect on other inputs, whose size is
     * known. */
    GGUF_OPEN_STOP_AT_TRAILING = 1u << 2
};

/* How many bytes after the data section a GGUF_OPEN_STOP_AT_TRAILING
 * stream is read at most. */
#define GGUF_TRAILING_READ_MAX 65536

/* Opens and validates a GGUF file.
 *
 * `path` is a file name, or "-" for standard input.  A regular file is
 * memory-mapped read-only; "-", pipes, sockets and other non-seekable inputs
 * are read as a stream; gzip input (recognised by its magic bytes, from a
 * path or a stream) is decompressed through zlib and read as a stream.  The
 * same parser serves every mode and gives the same verdict for the same bytes.
 * `display_name`, when not NULL, is used instead of `path` in messages
 * (e.g. "(stdin)").
 *
 * Everything the format defines is checked before use (see libgguf(3)):
 * on any violation nothing is returned and err names the item and offset.
 * Metadata (header, KV pairs, tensor infos) over GGUF_METADATA_MAX bytes
 * is refused, and memory for parsing is bounded by its size (see
 * GGUF_PARSE_MEM_MAPPED).
 *
 * A mapped file is read in place, by the kernel, page by page as it is
 * touched: by the parser, by hashing, and by the caller through the
 * borrowed pointers (strings, array data, tensor data).  When another
 * process truncates the file while it is open, touching a page past the
 * new end raises SIGBUS, whose default action kills the process without a
 * message (an I/O error under a mapped page does the same).  The library
 * installs no signal handler.  A program that must survive this either
 * opens with GGUF_OPEN_NO_MMAP (the bytes are then copied as read, and a
 * shrunk file is an error like any truncated input), or catches SIGBUS
 * with SA_SIGINFO and looks for si_addr in gguf_mapped_range() (and, while
 * gguf_open() itself is parsing, in the file being opened).  write(2) from
 * such pages does not raise SIGBUS but fails with EFAULT: passing
 * tensor data of a shrunk mapping to gguf_writer_write() gives GGUF_E_IO
 * with sys_errno EFAULT.
 *
 * Returns GGUF_OK and stores a handle in *out (close it with gguf_close), or
 * GGUF_E_IO (cannot open/read/map), GGUF_E_NOMEM, GGUF_E_FORMAT (malformed),
 * GGUF_E_UNSUPPORTED (e.g. a version this library does not know),
 * GGUF_E_INVALID (NULL path or out).  *out is NULL on failure. */
GGUF_API int gguf_open(gguf_file **out, const char *path, const char *display_name,
                       unsigned flags, gguf_error *err);

/* As gguf_open(), on an open file descriptor, which the handle takes over
 * (it is closed by gguf_close, or on failure). */
GGUF_API int gguf_open_fd(gguf_file **out, int fd, const char *display_name,
                          unsigned flags, gguf_error *err);

/* As gguf_open(), on `size` bytes at `data` in memory, which must stay valid
 * and unchanged until gguf_close.  No copy is made. */
GGUF_API int gguf_open_memory(gguf_file **out, const void *data, size_t size,
                              const char *display_name, gguf_error *err);

/* Releases the handle and everything borrowed from it.  NULL is allowed. */
GGUF_API void gguf_close(gguf_file *f);

enum gguf_byte_order { GGUF_LITTLE_ENDIAN = 0, GGUF_BIG_ENDIAN = 1 };

enum gguf_input_mode { GGUF_INPUT_MAPPED = 0, GGUF_INPUT_STREAM = 1, GGUF_INPUT_GZIP = 2,
                       GGUF_INPUT_MEMORY = 3 };

/* Header facts. */
GGUF_API const char *gguf_name(const gguf_file *f);      /* display name, never NULL */
GGUF_API uint32_t gguf_version(const gguf_file *f);      /* 1, 2 or 3 */
GGUF_API int gguf_byte_order(const gguf_file *f);        /* enum gguf_byte_order */
GGUF_API int gguf_input_mode(const gguf_file *f);        /* enum gguf_input_mode */
GGUF_API uint64_t gguf_kv_count(const gguf_file *f);
GGUF_API uint64_t gguf_tensor_count(const gguf_file *f);
GGUF_API uint32_t gguf_alignment(const gguf_file *f);    /* general.alignment or 32 */
GGUF_API uint64_t gguf_data_offset(const gguf_file *f);  /* start of the data section */
/* Total bytes of the (decompressed) input; for GGUF_OPEN_SEQUENTIAL streams,
 * the bytes read so far until the stream has been read to its end. */
GGUF_API uint64_t gguf_file_size(const gguf_file *f);
/* End of the last tensor's data (absolute), or data offset if no tensor. */
GGUF_API uint64_t gguf_data_end(const gguf_file *f);
/* 1 when a GGUF_OPEN_STOP_AT_TRAILING stream stopped reading after the data
 * section: more than GGUF_TRAILING_READ_MAX bytes follow the padding after
 * the last tensor (gguf_data_end() rounded up to the alignment), the size
 * of the input is not known, gguf_file_size() counts the bytes read so
 * far, and the whole-file digest of gguf_hash_file() is not that of the
 * input.  Else 0. */
GGUF_API int gguf_stopped_at_trailing(const gguf_file *f);

/* 1 when f is read once, front to back: a pipe, a socket or other
 * stream, or gzip-compressed input (decompressed as a stream even from a
 * regular file).  Its tensors have no data pointer; their data is read
 * with gguf_read_data() in offset order (gguf_tensor_order()).  0 for a
 * mapped file or memory. */
GGUF_API int gguf_is_stream(const gguf_file *f);

/* The indices of f's tensors in the order of their data offsets (ties in
 * directory order): gguf_tensor_count(f) entries owned by f, NULL when it
 * has no tensors.  The order in which a stream must read tensor data;
 * writers lay tensors out in directory order, so it is usually 0, 1, ... */
GGUF_API const uint64_t *gguf_tensor_order(const gguf_file *f);

/* 1 when f's tensor data is in the other byte order than this host's: the
 * elements of its plain tensors (F32, F16, ...) must go through
 * gguf_swap_elements() before use, and its quantized blocks cannot be read
 * here.  0 when the data can be used as it is. */
GGUF_API int gguf_data_swapped(const gguf_file *f);

/* Byte-swaps the n elements of plain type `type` (F32, F16, BF16, F64, I8,
 * I16, I32, I64: one element a block) at src into dst; dst may be src.
 * Returns GGUF_OK, or GGUF_E_UNSUPPORTED for a quantized or unknown type,
 * whose blocks mix fields of several sizes (dst unchanged). */
GGUF_API int gguf_swap_elements(uint32_t type, void *dst, const void *src, uint64_t n);

/* The memory mapping under a GGUF_INPUT_MAPPED file: stores its first byte
 * in *base and its length (the file's size when it was opened) in *len and
 * returns 1.  For any other input, and for a NULL f, stores NULL and 0 and
 * returns 0.  base and len may each be NULL.  The range is fixed from
 * gguf_open() to gguf_close(f).  For a SIGBUS handler (see gguf_open): a
 * fault inside the range is a fault of this file. */
GGUF_API int gguf_mapped_range(const gguf_file *f, const void **base, size_t *len);

/* A metadata value, borrowed from its file.  Scalars are converted to host
 * byte order.  For strings, `str` points into the file.  For arrays,
 * elem_type and count describe the elements; read them with
 * gguf_array_get() / gguf_array_data(). */
typedef struct gguf_value {
    uint32_t type;          /* enum gguf_vtype */
    uint32_t elem_type;     /* arrays only: element type */
    uint64_t count;         /* arrays only: number of elements */
    uint64_t offset;        /* byte offset of the value in the file */
    union {
        uint8_t u8; int8_t i8; uint16_t u16; int16_t i16;
        uint32_t u32; int32_t i32; uint64_t u64; int64_t i64;
        float f32; double f64; int b;   /* b is 0 or 1 */
        gguf_str str;
    } v;
    const void *priv;       /* arrays: internal, do not touch */
} gguf_value;

/* A key-value pair. */
typedef struct gguf_kv {
    gguf_str key;
    uint64_t offset;        /* byte offset of the pair (its key length field) */
    gguf_value value;
} gguf_kv;

/* KV pair number i (0-based, file order), or NULL when i is out of range. */
GGUF_API const gguf_kv *gguf_kv_at(const gguf_file *f, uint64_t i);

/* KV pair whose key is the NUL-terminated `key`, or NULL when absent.
 * Constant time (hashed). */
GGUF_API const gguf_kv *gguf_kv_find(const gguf_file *f, const char *key);

/* Typed getters by key.  Each returns GGUF_OK and stores the value,
 * GGUF_E_NOT_FOUND when the key is absent, or GGUF_E_TYPE when the value has
 * another type (no conversion is made).  err may be NULL. */
GGUF_API int gguf_kv_u8(const gguf_file *f, const char *key, uint8_t *out, gguf_error *err);
GGUF_API int gguf_kv_i8(const gguf_file *f, const char *key, int8_t *out, gguf_error *err);
GGUF_API int gguf_kv_u16(const gguf_file *f, const char *key, uint16_t *out, gguf_error *err);
GGUF_API int gguf_kv_i16(const gguf_file *f, const char *key, int16_t *out, gguf_error *err);
GGUF_API int gguf_kv_u32(const gguf_file *f, const char *key, uint32_t *out, gguf_error *err);
GGUF_API int gguf_kv_i32(const gguf_file *f, const char *key, int32_t *out, gguf_error *err);
GGUF_API int gguf_kv_u64(const gguf_file *f, const char *key, uint64_t *out, gguf_error *err);
GGUF_API int gguf_kv_i64(const gguf_file *f, const char *key, int64_t *out, gguf_error *err);
GGUF_API int gguf_kv_f32(const gguf_file *f, const char *key, float *out, gguf_error *err);
GGUF_API int gguf_kv_f64(const gguf_file *f, const char *key, double *out, gguf_error *err);
GGUF_API int gguf_kv_bool(const gguf_file *f, const char *key, int *out, gguf_error *err);
GGUF_API int gguf_kv_str(const gguf_file *f, const char *key, gguf_str *out, gguf_error *err);

/* Any integer-typed value (UINT8..INT64, not BOOL) widened to uint64_t;
 * GGUF_E_TYPE for non-integers and for negative values. */
GGUF_API int gguf_kv_uint(const gguf_file *f, const char *key, uint64_t *out, gguf_error *err);

/* The array at `key` whose elements have type elem_type.  GGUF_E_TYPE when
 * the value is not an array or its elements have another type. */
GGUF_API int gguf_kv_array(const gguf_file *f, const char *key, uint32_t elem_type,
                           const gguf_value **out, gguf_error *err);

/* Element i of array `arr` (arr->type == GGUF_VT_ARRAY) into *out; nested
 * arrays come back as array values.  GGUF_E_INVALID when arr is not an array
 * or i >= arr->count. */
GGUF_API int gguf_array_get(const gguf_value *arr, uint64_t i, gguf_value *out);

/* Convenience: string element i of a STRING array, or {NULL, 0} when arr is
 * not a string array or i is out of range. */
GGUF_API gguf_str gguf_array_str(const gguf_value *arr, uint64_t i);

/* Raw element storage of an array of fixed-size scalars, in host byte order
 * (little-endian files on little-endian hosts): count elements of
 * gguf_vtype_size(elem_type) bytes.  NULL for string and nested arrays and
 * when the file's byte order differs from the host's (use gguf_array_get).
 * The pointer may be unaligned for its element type. */
GGUF_API const void *gguf_array_data(const gguf_value *arr);

/* Longest tensor name, in bytes, that the reader accepts and the writer
 * writes. */
#define GGUF_TENSOR_NAME_MAX 64

/* One tensor of the directory. */
typedef struct gguf_tensor {
    gguf_str name;
    uint32_t type;          /* ggml type id (enum gguf_ttype) */
    uint32_t n_dims;        /* 1..4 */
    uint64_t ne[4];         /* dims; those past n_dims are 1 */
    uint64_t n_elements;    /* product of ne */
    uint64_t offset;        /* data offset relative to the data section */
    uint64_t file_offset;   /* absolute: gguf_data_offset() + offset */
    uint64_t size;          /* bytes of data */
    uint64_t info_offset;   /* byte offset of this tensor's info (its name length) */
    const void *data;       /* the bytes when mapped (or in memory); NULL for streams */
} gguf_tensor;

/* Tensor number i (file order), or NULL when out of range. */
GGUF_API const gguf_tensor *gguf_tensor_at(const gguf_file *f, uint64_t i);

/* Tensor with the NUL-terminated `name`, or NULL.  Constant time. */
GGUF_API const gguf_tensor *gguf_tensor_find(const gguf_file *f, const char *name);

/* Index of tensor t within f (t must come from f). */
GGUF_API uint64_t gguf_tensor_index(const gguf_file *f, const gguf_tensor *t);

/* Copies n bytes at absolute file offset `offset` into buf.
 * Mapped and memory input: any range inside the file.  Streams: ranges must
 * be requested in increasing order of offset (skipped bytes are read and
 * discarded); a range that starts before the stream position gives
 * GGUF_E_INVALID.  Returns GGUF_OK, GGUF_E_FORMAT when the input ends before
 * offset + n (the message names the file and offset), GGUF_E_IO. */
GGUF_API int gguf_read_data(gguf_file *f, uint64_t offset, void *buf, size_t n, gguf_error *err);

/* For a GGUF_OPEN_SEQUENTIAL stream: reads the rest of the input (after all
 * tensor data, discarding it), so that gguf_file_size() is exact (with
 * GGUF_OPEN_STOP_AT_TRAILING, at most GGUF_TRAILING_READ_MAX bytes past the
 * data section: see gguf_stopped_at_trailing()).  For other inputs does nothing.  Returns GGUF_OK, GGUF_E_IO, or GGUF_E_FORMAT when the
 * input ends before the last tensor's data. */
GGUF_API int gguf_read_to_end(gguf_file *f, gguf_error *err);

/* Size in bytes of the metadata section: from offset 0 to the end of the
 * tensor infos (before the padding that aligns the data section). */
GGUF_API uint64_t gguf_header_size(const gguf_file *f);

/* The header bytes (offset 0 .. gguf_header_size()), in file byte order. */
GGUF_API const void *gguf_header_bytes(const gguf_file *f);

/* ------------------------------------------------------------------------ */
/* Split sets                                                                */
/*
 * Large models ship as split sets: files PREFIX-00001-of-0000N.gguf ..
 * PREFIX-0000N-of-0000N.gguf (the names of llama.cpp's gguf-split and of
 * the gguf Python package, numbered from 1), each a whole GGUF file with
 * some of the tensors and the keys split.no (UINT16, the shard's number
 * from 0), split.count (UINT16, N) and split.tensors.count (INT32, the
 * tensors of the whole set); the model's metadata is in the first shard,
 * the others carry only the split keys.  A gguf_split opens a set as one
 * model: a plain file (no split.count, or 1) is a set of one shard.
 */
typedef struct gguf_split gguf_split;

/* The most shards a set can have (split.count is 16 bits). */
#define GGUF_SPLIT_MAX 65535u

/* Opens the set that the file at `path` belongs to (any of its shards),
 * each shard with gguf_open(..., flags, ...).  The others are found by
 * name, next to `path`; every shard must be there with split.count as the
 * first says, split.no as its name says and the same split.tensors.count,
 * which must be the number of tensors in all shards; no tensor name may be
 * in two shards; no file may be named as a shard past the last (-00004-of-
 * 00003).  A shard of a set read from standard input or gzip-compressed
 * cannot lead to the others: an error (open it alone with gguf_open()).
 * Errors name the file, the key or tensor and its byte offset: a missing
 * shard is GGUF_E_IO with sys_errno ENOENT, the others GGUF_E_FORMAT,
 * besides those of gguf_open().  *out is NULL on failure. */
GGUF_API int gguf_split_open(gguf_split **out, const char *path, unsigned flags, gguf_error *err);

/* A set of one shard: the open file f, taken over (closed by
 * gguf_split_close(), or here on failure), whatever split keys it has: a
 * shard looked at alone, or a file read from standard input.  Its path is
 * gguf_name(f).  GGUF_E_NOMEM, GGUF_E_INVALID (NULL f or out). */
GGUF_API int gguf_split_adopt(gguf_split **out, gguf_file *f, gguf_error *err);

/* Closes every shard.  NULL is allowed. */
GGUF_API void gguf_split_close(gguf_split *s);

/* The number of shards (1 for a plain file). */
GGUF_API uint32_t gguf_split_count(const gguf_split *s);

/* Shard i (0-based, split.no order) and its path, or NULL when i is out of
 * range; shard 0 holds the model's metadata.  Borrowed: valid until
 * gguf_split_close(). */
GGUF_API gguf_file *gguf_split_shard(const gguf_split *s, uint32_t i);
GGUF_API const char *gguf_split_path(const gguf_split *s, uint32_t i);

/* The tensors of all shards, shard after shard: tensor i of the set (and
 * in *shard, when not NULL, the shard that holds it: its offsets and data
 * are that file's), or NULL when i is out of range. */
GGUF_API uint64_t gguf_split_tensor_count(const gguf_split *s);
GGUF_API const gguf_tensor *gguf_split_tensor_at(const gguf_split *s, uint64_t i, uint32_t *shard);

/* The tensor named `name` in any shard, and its shard in *shard, or NULL.
 * Constant time. */
GGUF_API const gguf_tensor *gguf_split_tensor_find(const gguf_split *s, const char *name,
                                                   uint32_t *shard);

/* The name of shard `no` (from 0) of a set of `count` with prefix `prefix`:
 * "PREFIX-%05u-of-%05u.gguf" with no + 1, as snprintf() writes it into
 * buf of size bytes; returns the length it has (or would have), or -1 when
 * count is 0 or above GGUF_SPLIT_MAX or no >= count. */
GGUF_API int gguf_split_name(char *buf, size_t size, const char *prefix, uint32_t no, uint32_t count);

/* When `path` is named as a shard (...-NNNNN-of-MMMMM.gguf, 1 <= NNNNN <=
 * MMMMM), the length of its prefix, with its number from 0 in *no and the
 * count in *count (each may be NULL); else 0. */
GGUF_API size_t gguf_split_prefix(const char *path, uint32_t *no, uint32_t *count);

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */

typedef struct gguf_writer gguf_writer;

/* Creates an empty writer: GGUF version 3, little-endian, alignment 32.
 * Returns NULL when out of memory.  Free it with gguf_writer_free(). */
GGUF_API gguf_writer *gguf_writer_new(void);

/* Releases the writer.  If output was opened with gguf_writer_open() and not
 * completed by gguf_writer_finish(), the temporary file is removed and the
 * target is left as it was.  NULL is allowed. */
GGUF_API void gguf_writer_free(gguf_writer *w);

/* Version (1, 2 or 3) and byte order of the output.  Only before any KV or
 * tensor is added; GGUF_E_INVALID otherwise or for a bad value.  Tensor data
 * is always written as given (the caller byte-swaps it for big-endian). */
GGUF_API int gguf_writer_set_version(gguf_writer *w, uint32_t version, gguf_error *err);
GGUF_API int gguf_writer_set_byte_order(gguf_writer *w, int byte_order, gguf_error *err);

/* KV pairs, appended in call order.  Keys are NUL-terminated, non-empty, at
 * most 65535 bytes, unique (GGUF_E_INVALID otherwise).  A general.alignment
 * key must be UINT32, a power of two, at most 1 MiB; it sets the alignment.
 * Strings are copied. */
GGUF_API int gguf_writer_add_u8(gguf_writer *w, const char *key, uint8_t v, gguf_error *err);
GGUF_API int gguf_writer_add_i8(gguf_writer *w, const char *key, int8_t v, gguf_error *err);
GGUF_API int gguf_writer_add_u16(gguf_writer *w, const char *key, uint16_t v, gguf_error *err);
GGUF_API int gguf_writer_add_i16(gguf_writer *w, const char *key, int16_t v, gguf_error *err);
GGUF_API int gguf_writer_add_u32(gguf_writer *w, const char *key, uint32_t v, gguf_error *err);
GGUF_API int gguf_writer_add_i32(gguf_writer *w, const char *key, int32_t v, gguf_error *err);
GGUF_API int gguf_writer_add_u64(gguf_writer *w, const char *key, uint64_t v, gguf_error *err);
GGUF_API int gguf_writer_add_i64(gguf_writer *w, const char *key, int64_t v, gguf_error *err);
GGUF_API int gguf_writer_add_f32(gguf_writer *w, const char *key, float v, gguf_error *err);
GGUF_API int gguf_writer_add_f64(gguf_writer *w, const char *key, double v, gguf_error *err);
GGUF_API int gguf_writer_add_bool(gguf_writer *w, const char *key, int v, gguf_error *err);
GGUF_API int gguf_writer_add_str(gguf_writer *w, const char *key, const char *s, size_t len,
                                 gguf_error *err);
/* An array of n fixed-size scalars of elem_type, host byte order. */
GGUF_API int gguf_writer_add_array(gguf_writer *w, const char *key, uint32_t elem_type,
                                   const void *data, uint64_t n, gguf_error *err);
/* An array of n strings. */
GGUF_API int gguf_writer_add_str_array(gguf_writer *w, const char *key, const gguf_str *s,
                                       uint64_t n, gguf_error *err);
/* Any value, including nested arrays, e.g. one read from another file. */
GGUF_API int gguf_writer_add_value(gguf_writer *w, const char *key, const gguf_value *v,
                                   gguf_error *err);
/* Copies KV pair `kv` (from an open file) keeping its key, type and value
 * bit for bit. */
GGUF_API int gguf_writer_copy_kv(gguf_writer *w, const gguf_kv *kv, gguf_error *err);

/* Declares the next tensor: NUL-terminated name (non-empty, at most 64
 * bytes, unique), ggml type id, 1..4 dims (ne[0] a multiple of the block
 * size).  Data offsets are assigned in call order, each aligned. */
GGUF_API int gguf_writer_add_tensor(gguf_writer *w, const char *name, uint32_t type,
                                    uint32_t n_dims, const uint64_t *ne, gguf_error *err);

/* Opens the output and writes the header (all KVs and tensor infos must have
 * been added).  `path` "-" means standard output.  A file is written to a
 * temporary file in the same directory and only appears under `path` when
 * gguf_writer_finish() succeeds.  On Linux the temporary file has no name
 * (O_TMPFILE): nothing is left behind whatever ends the process, SIGKILL
 * included.  Where O_TMPFILE is refused (an old kernel, a file system
 * without it, no /proc) it is the hidden file ".BASE.XXXXXX" next to
 * `path`, which gguf_writer_temp_path() returns.  Either way the file gets
 * mode 0666 less the umask, as creat(2) would give; an existing target's
 * mode is not kept.  When `path` exists and is not a regular file (a FIFO,
 * /dev/null) it is written in place.  A failure before the temporary file
 * exists leaves the writer usable (another path may be tried); any failure
 * after that abandons the output: the temporary file is removed and later
 * calls fail. */
GGUF_API int gguf_writer_open(gguf_writer *w, const char *path, gguf_error *err);

/* As gguf_writer_open() on an open descriptor (a pipe, stdout ...), which
 * the writer does not close. */
GGUF_API int gguf_writer_open_fd(gguf_writer *w, int fd, const char *display_name,
                                 gguf_error *err);

/* Appends n bytes of tensor data.  Data is taken in tensor order; chunks may
 * split or span tensors; alignment padding between tensors is inserted by
 * the writer.  GGUF_E_INVALID when more bytes are given than the tensors
 * hold. */
GGUF_API int gguf_writer_write(gguf_writer *w, const void *data, size_t n, gguf_error *err);

/* As gguf_writer_write(), with the n bytes at byte `offset` of the open
 * descriptor fd (a regular file, which the writer does not close): the
 * kernel copies them (copy_file_range(2): no copy through the process, and
 * on file systems that share blocks, such as Btrfs and XFS, often no copy
 * at all) where it can, else they are read and written.  A file that ends
 * before offset + n gives GGUF_E_FORMAT (and abandons the output, as a
 * failed write does); GGUF_E_IO for other failures. */
GGUF_API int gguf_writer_write_from(gguf_writer *w, int fd, uint64_t offset, uint64_t n,
                                    gguf_error *err);

/* Completes the output: checks that every tensor got all its bytes, writes
 * the padding after the last tensor (ggml expects the data section to end
 * aligned), flushes, and for a file output fsyncs, puts the file in place
 * and fsyncs the directory.  A named temporary file is renamed over the
 * target.  An unnamed one is linked to the target when that does not exist,
 * else linked to a hidden name that is renamed over the target; the hidden
 * name exists only between those two calls, during which the calling
 * thread holds back every signal it can (its mask is restored after).  On
 * failure before the file is in place the temporary file is removed and the
 * target is left as it was; a failing directory fsync after it returns
 * GGUF_E_IO with the file in place. */
GGUF_API int gguf_writer_finish(gguf_writer *w, gguf_error *err);

/* The header the output will have, as gguf_writer_open() writes it: the
 * KV pairs and tensor infos added so far and the padding up to the data
 * section (gguf_writer_data_offset() bytes), in *out (malloc()ed; free()
 * it) and *len.  Any time after the writer is made; it writes nothing.
 * For rewriting a file's header in place.  GGUF_E_NOMEM, GGUF_E_INVALID
 * (NULL arguments).  gguf_writer_header_size(): its size before the
 * padding. */
GGUF_API int gguf_writer_header(gguf_writer *w, void **out, size_t *len, gguf_error *err);
GGUF_API uint64_t gguf_writer_header_size(const gguf_writer *w);

/* Offset of the data section and total size of the output (including the
 * padding after the last tensor), computed from what has been added so far
 * (valid before open). */
GGUF_API uint64_t gguf_writer_data_offset(const gguf_writer *w);
GGUF_API uint64_t gguf_writer_total_size(const gguf_writer *w);

/* Name of the temporary output file while a file output is open and its
 * temporary file has a name (the mkostemp scheme, see gguf_writer_open),
 * else NULL: before open, after finish or failure, for standard output and
 * descriptors, and for an unnamed (O_TMPFILE) file, which needs no removal.
 * The string stays valid until gguf_writer_free(); a caller that copies it
 * right after gguf_writer_open() may unlink() it from a signal handler
 * (async-signal-safe) to leave nothing behind. */
GGUF_API const char *gguf_writer_temp_path(const gguf_writer *w);

/* ------------------------------------------------------------------------ */
/* Hashing                                                                   */

/* Checksum algorithms.  Each is the reference algorithm with seed 0, so that
 * the digest of a whole file equals what `xxhsum -H3`, `-H2`, `-H1`, `-H0`,
 * zlib's crc32(), sha256sum or sha1sum give for the same bytes.  SHA-256
 * and SHA-1 are OpenSSL's (libcrypto). */
enum gguf_hash_algo {
    GGUF_HASH_XXH3 = 0,     /* XXH3-64, 8 bytes (xxhsum -H3); the default */
    GGUF_HASH_XXH128 = 1,   /* XXH3-128, 16 bytes (xxhsum -H2) */
    GGUF_HASH_XXH64 = 2,    /* XXH64, 8 bytes (xxhsum -H1) */
    GGUF_HASH_CRC32 = 3,    /* CRC-32 of zlib, gzip and PNG, 4 bytes */
    GGUF_HASH_XXH32 = 4,    /* XXH32, 4 bytes (xxhsum -H0) */
    GGUF_HASH_SHA256 = 5,   /* SHA-256, 32 bytes (sha256sum; Hugging Face's file hashes) */
    GGUF_HASH_SHA1 = 6,     /* SHA-1, 20 bytes (sha1sum) */
    GGUF_HASH_COUNT = 7
};

#define GGUF_DIGEST_MAX 32                      /* bytes of the longest digest */
#define GGUF_DIGEST_HEX_MAX (2 * GGUF_DIGEST_MAX + 1) /* its hex form with the NUL */

/* A digest in canonical byte order: most significant byte first, the order
 * of the hex digits xxhsum prints (for XXH3-128: high half, then low). */
typedef struct gguf_digest {
    uint32_t algo;          /* enum gguf_hash_algo */
    uint32_t size;          /* bytes used in bytes[]: gguf_hash_size(algo) */
    unsigned char bytes[GGUF_DIGEST_MAX];
} gguf_digest;

/* Key under which gguf-verify --embed and gguf-requant --checksums store
 * tensor checksums: an ARRAY of UINT64 with one element per tensor, in
 * directory order, each the XXH3-64 (seed 0) of that tensor's data bytes. */
#define GGUF_KEY_TENSOR_XXH3 "gguf_tools.checksum.tensor_xxh3"

/* Lower-case name of an algorithm ("xxh3", "xxh128", "xxh64", "crc32",
 * "xxh32", "sha256", "sha1"), or NULL for an unknown id. */
GGUF_API const char *gguf_hash_name(uint32_t algo);

/* Looks an algorithm up by its name, case-insensitively.  Returns GGUF_OK
 * and stores the id, GGUF_E_NOT_FOUND for an unknown name, GGUF_E_INVALID
 * for NULL arguments. */
GGUF_API int gguf_hash_parse(const char *name, uint32_t *algo);

/* Bytes of a digest of `algo` (4, 8, 16, 20 or 32), or 0 for an unknown id. */
GGUF_API uint32_t gguf_hash_size(uint32_t algo);

/* Writes d as 2 * d->size lower-case hex digits and a NUL into buf, which
 * has room for GGUF_DIGEST_HEX_MAX bytes.  Returns buf. */
GGUF_API char *gguf_digest_hex(const gguf_digest *d, char *buf);

/* Parses len hex digits (either case) at hex as a digest of `algo`.
 * Returns GGUF_OK, or GGUF_E_INVALID when algo is unknown or hex is not
 * exactly 2 * gguf_hash_size(algo) hex digits. */
GGUF_API int gguf_digest_parse(uint32_t algo, const char *hex, size_t len, gguf_digest *out);

/* 1 when a and b are digests of the same algorithm with the same bytes,
 * else 0. */
GGUF_API int gguf_digest_equal(const gguf_digest *a, const gguf_digest *b);

/* The value of an 8-byte digest (XXH3-64, XXH64) as an integer, as xxHash
 * returns it and as GGUF_KEY_TENSOR_XXH3 stores it; 0 for other sizes. */
GGUF_API uint64_t gguf_digest_u64(const gguf_digest *d);

/* An incremental hash: new, update any number of times, digest. */
typedef struct gguf_hasher gguf_hasher;

/* Creates a hasher for `algo`, ready for input.  Returns NULL for an
 * unknown algorithm or when out of memory.  Free it with gguf_hasher_free. */
GGUF_API gguf_hasher *gguf_hasher_new(uint32_t algo);

/* Releases the hasher.  NULL is allowed. */
GGUF_API void gguf_hasher_free(gguf_hasher *h);

/* Forgets the input so far: the hasher starts again. */
GGUF_API void gguf_hasher_reset(gguf_hasher *h);

/* Adds n bytes at p to the input (p may be NULL when n is 0). */
GGUF_API void gguf_hasher_update(gguf_hasher *h, const void *p, size_t n);

/* Stores the digest of the input so far; the hasher may take more input. */
GGUF_API void gguf_hasher_digest(const gguf_hasher *h, gguf_digest *out);

/* One shot: the digest of n bytes at p.  Returns GGUF_OK, GGUF_E_INVALID
 * for an unknown algorithm or NULL arguments, GGUF_E_NOMEM. */
GGUF_API int gguf_hash_buffer(uint32_t algo, const void *p, size_t n, gguf_digest *out);

/* Called by gguf_hash_file() as the work goes on: `done` bytes of `total`
 * (total is 0 when the size of a stream is not known yet). */
typedef void (*gguf_hash_progress)(void *ctx, uint64_t done, uint64_t total);

/* Hashes an open file in one pass over its bytes, in offset order: the
 * whole input into *file (every byte, so that it equals xxhsum's digest of
 * the same bytes; for gzip input, of the decompressed bytes), the metadata
 * section (bytes 0 .. gguf_header_size()) into *metadata, the data of all
 * tensors, one after the other in directory order without the padding
 * between them, into *data (what llama.cpp's llama-gguf-hash reports for
 * a model file), and each tensor's data into tensors[i] for tensor i of
 * the directory.  Any of the four may be NULL to skip it; tensors, when
 * given, has gguf_tensor_count() elements.  `progress` may be NULL.
 *
 * A mapped file is read in place, with sequential-access hints to the
 * kernel for the duration.  A stream must have been opened with
 * GGUF_OPEN_SEQUENTIAL: it is read to its end, so that afterwards
 * gguf_file_size() is exact (with GGUF_OPEN_STOP_AT_TRAILING, to its end
 * or until it is known to go on too far past the data section: see
 * gguf_stopped_at_trailing()).  Bytes a stream has passed are gone (unless
 * the whole input fitted in the header buffer): hashing a stream opened
 * without the flag, or a second time, then gives GGUF_E_INVALID.
 *
 * Returns GGUF_OK; GGUF_E_FORMAT when a stream ends before the data of a
 * tensor (err names it and the offset); GGUF_E_IO; GGUF_E_NOMEM;
 * GGUF_E_UNSUPPORTED when *data is asked of a stream whose tensors are
 * not stored in directory order; GGUF_E_INVALID for an unknown algorithm,
 * a NULL f, or stream data already consumed. */
GGUF_API int gguf_hash_file(gguf_file *f, uint32_t algo, gguf_digest *file, gguf_digest *metadata,
                            gguf_digest *data, gguf_digest *tensors, gguf_hash_progress progress,
                            void *ctx, gguf_error *err);

#ifdef __cplusplus
}
#endif

#endif /* GGUF_GGUF_H */
