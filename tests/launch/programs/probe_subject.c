// A small dynamically linked program for the ELF probe's tests: it needs libc and defines no
// allocation function of its own, so damaged copies of it are cheap to write and read.
#include <stdio.h>

int main(int argc, char** argv) {
  (void)argv;
  printf("%d\n", argc);
  return 0;
}
