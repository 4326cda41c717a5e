#include <check.h>
START_TEST(placeholder) { ck_assert(1); }
END_TEST
