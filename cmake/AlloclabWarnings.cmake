# Warnings apply to alloclab's own targets only, never to third-party headers.
add_library(alloclab_warnings INTERFACE)
target_compile_options(alloclab_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Wshadow -Wpedantic>
  $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor>
  # GCC 12 at -O3 reports false -Wrestrict errors inside std::string concatenation
  # (GCC bug 105329); the warning finds nothing real in our code.
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-restrict>
  # In a unity build a source's anonymous-namespace types are no longer in "the main file", and
  # GCC then warns about each class that holds one; the types are still private to the batch.
  $<$<AND:$<BOOL:${CMAKE_UNITY_BUILD}>,$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-subobject-linkage>
  $<$<AND:$<BOOL:${ALLOCLAB_WERROR}>,$<COMPILE_LANGUAGE:CXX,C>>:-Werror>)
