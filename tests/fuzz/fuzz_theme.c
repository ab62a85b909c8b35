/* fuzz_theme.c - libFuzzer target: a theme file's text through
 * theme_parse, onto the built-in theme (load_file refuses NUL bytes before
 * parsing, so the text here ends at the first). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "theme.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    struct theme t;
    char err[512];
    theme_builtin(&t, size & 1);
    if (theme_parse(&t, text, "fuzz.theme", err, sizeof(err)) == 0)
        for (int el = 0; el < TH_COUNT; el++)
            if (t.el[el].fg < THEME_DEFAULT_COLOUR || t.el[el].fg > 255 || t.el[el].bg < THEME_DEFAULT_COLOUR ||
                t.el[el].bg > 255)
                abort(); /* a colour curses cannot take */
    free(text);
    return 0;
}
