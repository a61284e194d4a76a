/* The request sizes for which the preloaded stuck_realloc never returns, and for which it
 * returns only after 1.5 s: after the tracer's writer gave up waiting for the call's record. */
#ifndef ALLOCLAB_STUCK_REALLOC_H
#define ALLOCLAB_STUCK_REALLOC_H
enum { stuck_realloc_size = 777777, late_realloc_size = 777778 };
#endif
