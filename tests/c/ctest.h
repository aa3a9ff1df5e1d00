/* The C unit tests' one assertion: a failed CHECK prints where and what, and the
 * program's exit status (ctest_status) is 1 when any failed. No framework. */
#ifndef CANONBTF_TESTS_CTEST_H
#define CANONBTF_TESTS_CTEST_H

#include <stdio.h>

static int ctest_failures, ctest_checks;

#define CHECK(cond)                                                                    \
    do {                                                                               \
        ctest_checks++;                                                                \
        if (!(cond)) {                                                                 \
            ctest_failures++;                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
        }                                                                              \
    } while (0)

/* Run one test function, naming it. */
#define RUN(test)                                                                      \
    do {                                                                               \
        int before_ = ctest_failures;                                                  \
        test();                                                                        \
        printf("%s %s\n", ctest_failures == before_ ? "ok  " : "FAIL", #test);         \
    } while (0)

static inline int ctest_status(const char *program)
{
    printf("%s: %d checks, %d failed\n", program, ctest_checks, ctest_failures);
    return ctest_failures ? 1 : 0;
}

#endif
