/* ui.h - the curses front end. */
#ifndef DDPTOP_UI_H
#define DDPTOP_UI_H

struct config;
struct dataset;
struct device_ops;

/* Runs the sweep under the interactive UI until the user quits. Returns the
 * process exit status. The terminal is restored on every path out. */
int ui_main(const struct config *cfg, const struct dataset *train, const struct dataset *test,
            const struct device_ops *dev);

#endif
