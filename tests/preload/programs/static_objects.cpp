// C++ globals whose constructor and destructor allocate: events before main and after it.
#include <cstdlib>
#include <string>
#include <vector>

#include "torture.h"

namespace {
const char* counts_path() {
  const char* p = std::getenv("TORTURE_COUNTS");
  return p ? p : "/dev/null";
}

struct Global {
  std::vector<std::string> strings;
  Global() {
    alloclab_run_begin("ctor");
    unsigned long long allocs = 0;
    for (int i = 0; i < 100; ++i) {
      void* p = std::malloc(1000 + i);
      ++allocs;
      std::free(p);
    }
    alloclab_run_end();
    torture_count(counts_path(), "ctor_allocs", allocs);
  }
  ~Global() {
    alloclab_run_begin("dtor");
    unsigned long long allocs = 0;
    for (int i = 0; i < 50; ++i) {
      char* p = static_cast<char*>(torture_keep(new char[2000 + i]));
      ++allocs;
      delete[] p;
    }
    alloclab_run_end();
    torture_count(counts_path(), "dtor_allocs", allocs);
  }
};
Global global;
}  // namespace

int main() {
  alloclab_run_begin("main");
  unsigned long long allocs = 0;
  for (int i = 0; i < 10; ++i) {
    auto* v = static_cast<std::vector<int>*>(torture_keep(new std::vector<int>(1000)));
    torture_keep(v->data());
    ++allocs;  // the vector object and its storage
    ++allocs;
    delete v;
  }
  alloclab_run_end();
  torture_count(counts_path(), "main_allocs", allocs);
  return 0;
}
