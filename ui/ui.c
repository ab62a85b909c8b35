/* ui.c - placeholder until the curses front end lands. */
#include "ui.h"

#include <stdio.h>

int ui_main(const struct config *cfg, const struct dataset *train, const struct dataset *test,
            const struct device_ops *dev)
{
    fprintf(stderr, "ddptop: the interactive UI is not available in this build yet; use --batch\n");
    return 2;
}
