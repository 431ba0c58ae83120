/* strtod in the "C" locale, whatever the process's LC_NUMERIC: a LIBSVM file writes
   1.5 wherever it is read, and plain strtod reads it as 1 once a program has set a
   locale whose decimal point is a comma (locale.setlocale(locale.LC_ALL, "") with
   LANG=de_DE.UTF-8, say).  pb_c_numbers_init makes the locale once, under the GIL, at
   import; it returns 0 when it cannot. */
#include <locale.h>
#include <stdlib.h>
#if defined(_WIN32)
static _locale_t pb_c_locale;
static int pb_c_numbers_init(void) {
    if (!pb_c_locale) pb_c_locale = _create_locale(LC_NUMERIC, "C");
    return pb_c_locale != NULL;
}
static double pb_strtod(const char* s, char** end) { return _strtod_l(s, end, pb_c_locale); }
#else
#if defined(__APPLE__) || defined(__FreeBSD__)
#include <xlocale.h>
#endif
static locale_t pb_c_locale;
static int pb_c_numbers_init(void) {
    if (!pb_c_locale) pb_c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    return pb_c_locale != (locale_t)0;
}
static double pb_strtod(const char* s, char** end) { return strtod_l(s, end, pb_c_locale); }
#endif
