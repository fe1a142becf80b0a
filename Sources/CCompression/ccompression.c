#include "ccompression.h"

#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

struct ccompression_decoder {
  int format;
  uint64_t memory_limit;
  /* Set once the library's state is allocated (inflateInit2 or lzma_stream_decoder succeeded). */
  int ready;
  z_stream zlib;
  lzma_stream lzma;
  char message[160];
};

static void remember(ccompression_decoder *decoder, const char *text) {
  if (text == NULL) text = "";
  strncpy(decoder->message, text, sizeof decoder->message - 1);
  decoder->message[sizeof decoder->message - 1] = '\0';
}

static void release(ccompression_decoder *decoder) {
  if (!decoder->ready) return;
  if (decoder->format == CCOMPRESSION_GZIP) {
    inflateEnd(&decoder->zlib);
  } else {
    lzma_end(&decoder->lzma);
  }
  decoder->ready = 0;
}

static int start(ccompression_decoder *decoder) {
  decoder->message[0] = '\0';
  if (decoder->format == CCOMPRESSION_GZIP) {
    memset(&decoder->zlib, 0, sizeof decoder->zlib);
    /* 16 + 15: a gzip wrapper (not zlib's, not raw deflate), with the largest window. */
    if (inflateInit2(&decoder->zlib, 16 + MAX_WBITS) != Z_OK) return CCOMPRESSION_NO_MEMORY;
  } else {
    lzma_stream blank = LZMA_STREAM_INIT;
    decoder->lzma = blank;
    /* One stream (no LZMA_CONCATENATED: Swift reads what follows it); an unsupported check is
     * reported, not skipped. A stream without a check (--check=none) is accepted, as xz does. */
    lzma_ret status = lzma_stream_decoder(&decoder->lzma, decoder->memory_limit, LZMA_TELL_UNSUPPORTED_CHECK);
    if (status != LZMA_OK) return CCOMPRESSION_NO_MEMORY;
  }
  decoder->ready = 1;
  return CCOMPRESSION_OK;
}

ccompression_decoder *ccompression_new(int format, uint64_t memory_limit) {
  if (format != CCOMPRESSION_GZIP && format != CCOMPRESSION_XZ) return NULL;
  ccompression_decoder *decoder = calloc(1, sizeof *decoder);
  if (decoder == NULL) return NULL;
  decoder->format = format;
  decoder->memory_limit = memory_limit == 0 ? 1 : memory_limit;
  if (start(decoder) != CCOMPRESSION_OK) {
    free(decoder);
    return NULL;
  }
  return decoder;
}

void ccompression_free(ccompression_decoder *decoder) {
  if (decoder == NULL) return;
  release(decoder);
  free(decoder);
}

int ccompression_reset(ccompression_decoder *decoder) {
  if (decoder->format == CCOMPRESSION_GZIP && decoder->ready) {
    decoder->message[0] = '\0';
    return inflateReset(&decoder->zlib) == Z_OK ? CCOMPRESSION_OK : CCOMPRESSION_NO_MEMORY;
  }
  release(decoder);
  return start(decoder);
}

static int step_gzip(ccompression_decoder *decoder, const uint8_t *input, size_t in_length, size_t *in_used,
                     uint8_t *output, size_t out_length, size_t *out_made) {
  z_stream *stream = &decoder->zlib;
  /* zlib counts in uInt: feed at most 1 GiB a call. */
  uInt in_now = in_length > (1u << 30) ? (1u << 30) : (uInt)in_length;
  uInt out_now = out_length > (1u << 30) ? (1u << 30) : (uInt)out_length;
  stream->next_in = (Bytef *)input;
  stream->avail_in = in_now;
  stream->next_out = output;
  stream->avail_out = out_now;
  int status = inflate(stream, Z_NO_FLUSH);
  *in_used = in_now - stream->avail_in;
  *out_made = out_now - stream->avail_out;
  stream->next_in = NULL;
  stream->next_out = NULL;
  switch (status) {
  case Z_OK:
  case Z_BUF_ERROR:
    return CCOMPRESSION_OK;
  case Z_STREAM_END:
    return CCOMPRESSION_END;
  case Z_MEM_ERROR:
    return CCOMPRESSION_NO_MEMORY;
  case Z_NEED_DICT:
    remember(decoder, "a preset dictionary is needed");
    return CCOMPRESSION_CORRUPT;
  default:
    remember(decoder, stream->msg);
    if (stream->msg != NULL &&
        (strcmp(stream->msg, "incorrect data check") == 0 || strcmp(stream->msg, "incorrect length check") == 0)) {
      return CCOMPRESSION_CHECK_MISMATCH;
    }
    if (stream->msg != NULL && strcmp(stream->msg, "incorrect header check") == 0) return CCOMPRESSION_NOT_FORMAT;
    return CCOMPRESSION_CORRUPT;
  }
}

static int step_xz(ccompression_decoder *decoder, const uint8_t *input, size_t in_length, size_t *in_used,
                   uint8_t *output, size_t out_length, size_t *out_made, int finish) {
  lzma_stream *stream = &decoder->lzma;
  stream->next_in = input;
  stream->avail_in = in_length;
  stream->next_out = output;
  stream->avail_out = out_length;
  lzma_ret status = lzma_code(stream, finish ? LZMA_FINISH : LZMA_RUN);
  *in_used = in_length - stream->avail_in;
  *out_made = out_length - stream->avail_out;
  stream->next_in = NULL;
  stream->next_out = NULL;
  switch (status) {
  case LZMA_OK:
    return CCOMPRESSION_OK;
  case LZMA_STREAM_END:
    return CCOMPRESSION_END;
  case LZMA_BUF_ERROR:
    /* No progress was possible: with finish set, the input ended inside the stream. */
    return finish ? CCOMPRESSION_TRUNCATED : CCOMPRESSION_OK;
  case LZMA_UNSUPPORTED_CHECK:
    remember(decoder, "the stream's integrity check is of a kind liblzma does not support");
    return CCOMPRESSION_UNSUPPORTED_CHECK;
  case LZMA_MEMLIMIT_ERROR:
    remember(decoder, "the memory limit was reached");
    return CCOMPRESSION_MEMORY_LIMIT;
  case LZMA_MEM_ERROR:
    return CCOMPRESSION_NO_MEMORY;
  case LZMA_FORMAT_ERROR:
    remember(decoder, "not the .xz stream header");
    return CCOMPRESSION_NOT_FORMAT;
  case LZMA_OPTIONS_ERROR:
    remember(decoder, "filters or options liblzma does not support");
    return CCOMPRESSION_UNSUPPORTED_OPTIONS;
  case LZMA_DATA_ERROR:
    remember(decoder, "the compressed data or an integrity check does not match");
    return CCOMPRESSION_CORRUPT;
  default:
    remember(decoder, "liblzma failed");
    return CCOMPRESSION_CORRUPT;
  }
}

int ccompression_step(ccompression_decoder *decoder, const uint8_t *input, size_t in_length, size_t *in_used,
                      uint8_t *output, size_t out_length, size_t *out_made, int finish) {
  *in_used = 0;
  *out_made = 0;
  if (!decoder->ready) return CCOMPRESSION_NO_MEMORY;
  if (decoder->format == CCOMPRESSION_GZIP) {
    return step_gzip(decoder, input, in_length, in_used, output, out_length, out_made);
  }
  return step_xz(decoder, input, in_length, in_used, output, out_length, out_made, finish);
}

const char *ccompression_message(const ccompression_decoder *decoder) { return decoder->message; }

uint64_t ccompression_memory_needed(const ccompression_decoder *decoder) {
  if (decoder->format != CCOMPRESSION_XZ || !decoder->ready) return 0;
  return lzma_memusage(&decoder->lzma);
}

const char *ccompression_zlib_version(void) { return zlibVersion(); }

const char *ccompression_lzma_version(void) { return lzma_version_string(); }
