# Warnings apply to alloclab's own targets only, never to third-party headers.
add_library(alloclab_warnings INTERFACE)
target_compile_options(alloclab_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Wshadow -Wpedantic>
  $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor>
  $<$<AND:$<BOOL:${ALLOCLAB_WERROR}>,$<COMPILE_LANGUAGE:CXX,C>>:-Werror>)
