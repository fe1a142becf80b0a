#ifndef BATCHDL_CCOMPRESSION_H
#define BATCHDL_CCOMPRESSION_H

/* One gzip member (zlib) or one .xz stream (liblzma) decoded step by step, for Swift.
 *
 * zlib's inflateInit2 and liblzma's LZMA_STREAM_INIT are macros Swift cannot call, and both
 * libraries keep pointers to their stream struct, which must not move: the decoder lives here, on
 * the C heap, behind an opaque pointer. Nothing here parses a format: zlib and liblzma do. Members
 * and streams that follow one another, and the bytes between them, are the caller's (Swift's). */

#include <stddef.h>
#include <stdint.h>

typedef struct ccompression_decoder ccompression_decoder;

enum {
  CCOMPRESSION_GZIP = 1,
  CCOMPRESSION_XZ = 2
};

/* What one step ended with. */
enum {
  /* Progress or none: more input or more output room is needed. */
  CCOMPRESSION_OK = 0,
  /* The member (gzip) or stream (xz) ended, its check verified; in_used counts its last byte. */
  CCOMPRESSION_END = 1,
  /* The data is not valid (the message says how, as the library put it). */
  CCOMPRESSION_CORRUPT = 2,
  /* gzip: the CRC-32 or the length in the trailer does not match the data. */
  CCOMPRESSION_CHECK_MISMATCH = 3,
  /* xz: the stream's integrity check is of a kind liblzma cannot compute. */
  CCOMPRESSION_UNSUPPORTED_CHECK = 4,
  /* xz: decoding needs more memory than the limit (ccompression_memory_needed says how much). */
  CCOMPRESSION_MEMORY_LIMIT = 5,
  /* xz: filters or options liblzma does not support. */
  CCOMPRESSION_UNSUPPORTED_OPTIONS = 6,
  /* xz: with finish set, the input stopped before the stream's end. */
  CCOMPRESSION_TRUNCATED = 7,
  /* Memory could not be allocated. */
  CCOMPRESSION_NO_MEMORY = 8,
  /* The header is not of the format (gzip: not 1f 8b 08; xz: not the stream header magic). */
  CCOMPRESSION_NOT_FORMAT = 9
};

/* A decoder of one gzip member (gzip only, not zlib or raw deflate) or one .xz stream, with
 * liblzma's memory use limited to memory_limit bytes; NULL when memory is short. */
ccompression_decoder *ccompression_new(int format, uint64_t memory_limit);

/* Frees the decoder and the library's state. NULL is allowed. */
void ccompression_free(ccompression_decoder *decoder);

/* Makes the decoder ready for the next member or stream: 0, or CCOMPRESSION_NO_MEMORY. */
int ccompression_reset(ccompression_decoder *decoder);

/* Decodes from input (in_length bytes) into output (out_length bytes), setting how many bytes
 * were read (in_used) and written (out_made). finish says no input follows this. Returns one of
 * the CCOMPRESSION_ statuses. */
int ccompression_step(ccompression_decoder *decoder, const uint8_t *input, size_t in_length, size_t *in_used,
                      uint8_t *output, size_t out_length, size_t *out_made, int finish);

/* The library's words for the last error, or "" when it gave none. Owned by the decoder. */
const char *ccompression_message(const ccompression_decoder *decoder);

/* xz: the memory the stream needs, as liblzma computed it (after CCOMPRESSION_MEMORY_LIMIT). */
uint64_t ccompression_memory_needed(const ccompression_decoder *decoder);

/* The versions of zlib and liblzma in use (run time), e.g. "1.2.13" and "5.4.1". */
const char *ccompression_zlib_version(void);
const char *ccompression_lzma_version(void);

#endif
