/* Exit status and signal passthrough: `exit3` exits 3, `sigterm` kills itself with SIGTERM. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  free(malloc(10));
  if (argc > 1 && strcmp(argv[1], "sigterm") == 0) raise(SIGTERM);
  return argc > 1 && strcmp(argv[1], "exit3") == 0 ? 3 : 0;
}
