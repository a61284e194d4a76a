#pragma once
// The library hides every symbol (-fvisibility=hidden) but the functions it interposes and its
// marker entry points, which are marked with this.
#define ALLOCLAB_EXPORT extern "C" __attribute__((visibility("default")))
