#include <stdint.h>

#include "harness.h"

void cmd_init(void);
void cmd_feed(char c);

/* each line is echoed as "> line" (a '\r' shown as <CR>), then fed character by character */
static void send(const char *s) {
  crucible_print("> ");
  for (const char *p = s; *p && *p != '\n'; p++) {
    if (*p == '\r') {
      crucible_print("<CR>");
    } else {
      char t[2] = {*p, 0};
      crucible_print(t);
    }
  }
  crucible_print("\n");
  while (*s) {
    cmd_feed(*s++);
  }
}

int crucible_test_main(void) {
  cmd_init();
  send("HELP\n");
  send("GET 0\n");
  send("SET 0 42\n");
  send("GET 0\n");
  send("SET 7 0xDEADbeef\n");
  send("GET 7\n");
  send("SET 4 0xa0fAF9\n"); /* both ends of both letter ranges */
  send("GET 4\n");
  send("GET 8\n");
  send("SET 8 1\n");
  send("SET 3 4294967295\n");
  send("GET 3\n");
  send("SET 3 4294967296\n");
  send("SET 3 0x100000000\n");
  send("GET 3\n");
  send("ADD 2 3\n");
  send("ADD 0xFFFFFFFF 2\n");
  send("ADD 4294967295 4294967295\n");
  send("ADD 0 0\n");
  send("ADD 10\n");
  send("FOO\n");
  send("set 1 2\n");
  send("HELP me\n");
  send("\n");
  send("   \n");
  send("  GET   0  \n");
  send("SET 1 12a\n");
  send("SET 1 0x\n");
  send("SET 1 -1\n");
  send("SET 0x1 0X00ff\n");
  send("GET 1\n");
  send("GET 0 1\n");
  send("GET\n");
  send("GET 0\r\n");
  send("SET 2                     0x00ff\n");  /* 32 characters: fits */
  send("SET 3                      0x00ff\n"); /* 33 characters: too long */
  send("GET 2\n");
  send("GET 3\n");
  send("GETX 0\n");
  cmd_init();
  send("GET 7\n");
  /* a partial line is kept until its newline */
  cmd_feed('G');
  cmd_feed('E');
  crucible_print("(partial)\n");
  send("T 0\n");
  return 0;
}
