#include <stddef.h>
#include <stdint.h>

uint32_t cobs_encode(const uint8_t *in, uint32_t len, uint8_t *out) {
  uint32_t code_at = 0; /* where the current group's code byte goes */
  uint32_t o = 1;
  uint8_t code = 1;
  for (uint32_t i = 0; i < len; i++) {
    if (in[i] == 0u) {
      out[code_at] = code;
      code_at = o++;
      code = 1;
      continue;
    }
    out[o++] = in[i];
    if (++code == 0xFFu) {
      out[code_at] = code;
      code = 1;
      if (i + 1u < len) { /* a new group only if more input follows */
        code_at = o++;
      } else {
        return o;
      }
    }
  }
  out[code_at] = code;
  return o;
}

int32_t cobs_decode(const uint8_t *in, uint32_t len, uint8_t *out) {
  if (len == 0u) {
    return -1;
  }
  uint32_t i = 0, o = 0;
  while (i < len) {
    uint8_t code = in[i++];
    if (code == 0u || i + (uint32_t)code - 1u > len) {
      return -1;
    }
    for (uint8_t k = 1; k < code; k++) {
      if (in[i] == 0u) {
        return -1;
      }
      out[o++] = in[i++];
    }
    if (code != 0xFFu && i < len) {
      out[o++] = 0;
    }
  }
  return (int32_t)o;
}
